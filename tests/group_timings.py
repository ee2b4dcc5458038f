"""The order in which `pytest` hands out its groups of tests (an xdist_group's name, else a
module's): longest first, by the durations a whole run recorded in group_timings.json, so that
its two processes finish together, the many short groups filling in at the end. Groups that
were not recorded (new ones) go after, in their own order.

`pytest --record-timings` records them: when the run ends it writes, for each group, the
seconds its end-to-end tests (`e2e`) and its others took (setup, call and teardown, as the test
reports give them; a session fixture's making counts to the group that first asked for it).
The two are kept apart because the fast tier (`pytest -m "not e2e"`) runs only the second:
there a group is as long as its tests that are not end to end."""

import json
import os
import platform
import time

import pytest

TIMINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "group_timings.json")
GROUP = "xdist_group"  # the user property naming a test's group in its reports


def name_groups(items):
  """Each test in its module's xdist group unless it has one (so that a module's fixtures are
  made once), the group named in its reports (for the `Recorder`)."""
  for item in items:
    if not item.get_closest_marker("xdist_group"):
      item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    item.user_properties.append((GROUP, group_of(item)))


def group_of(item):
  """The name of the xdist group `item` is in."""
  marker = item.get_closest_marker("xdist_group")
  return marker.args[0] if marker.args else marker.kwargs["name"]


def recorded(path=TIMINGS):
  """{group: {"e2e": seconds, "other": seconds}} as last recorded; empty if never."""
  if not os.path.exists(path):
    return {}
  with open(path) as file:
    return json.load(file)["groups"]


def longest_first(items, timings):
  """`items` sorted by their group's recorded seconds, longest first, counting a group's
  end-to-end seconds only if `items` hold any of its end-to-end tests; groups without a timing
  after the others, everything else in the order it came."""
  has_e2e = {group_of(item) for item in items if item.get_closest_marker("e2e")}

  def seconds(group):
    timing = timings[group]
    return timing["other"] + (timing["e2e"] if group in has_e2e else 0)

  def rank(item):
    group = group_of(item)
    return (0, -seconds(group)) if group in timings else (1, 0)

  return sorted(items, key=rank)


class Recorder:
  """A pytest plugin that adds up each group's seconds from the test reports (where they all
  arrive: pytest-xdist's controller, or the one process of `-n 0`) and writes them to `path`
  when the run ends."""

  def __init__(self, path=TIMINGS):
    self.path = path
    self.groups = {}
    self.started = time.time()

  def pytest_runtest_logreport(self, report):
    group = dict(report.user_properties).get(GROUP)
    if group is not None:
      kind = "e2e" if "e2e" in report.keywords else "other"
      timing = self.groups.setdefault(group, {"e2e": 0.0, "other": 0.0})
      timing[kind] += report.duration

  def pytest_sessionfinish(self, session):
    groups = dict(sorted(self.groups.items(),
                         key=lambda entry: -entry[1]["e2e"] - entry[1]["other"]))
    record = {
        "command": "pytest " + " ".join(session.config.invocation_params.args),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started)),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average "
                   f"{os.getloadavg()[0]:.1f} at the end",
        "wall_seconds": round(time.time() - self.started),
        "groups": {group: {kind: round(seconds, 1) for kind, seconds in timing.items()}
                   for group, timing in groups.items()},
    }
    with open(self.path, "w") as file:  # a group a line
      file.write(json.dumps(record, indent=1).replace("\n   ", " ").replace("\n  }", " }") + "\n")
