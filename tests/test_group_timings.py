"""The order in which `pytest` hands out its groups of tests comes from their recorded times
(tests/group_timings.py): `--record-timings` adds up each group's seconds from the test reports,
end-to-end tests apart, and a run sorts the groups it runs longest first by them."""

import json

import group_timings

pytest_plugins = ["pytester"]

# Two modules of tests for an inner pytest run: test_one in its module's group, one of its
# tests end to end; test_two's tests in the group it names.
MODULES = {
    "test_one": """
import time
import pytest

@pytest.mark.e2e
def test_long():
  time.sleep(1.0)

def test_short():
  time.sleep(0.1)
""",
    "test_two": """
import time
import pytest

pytestmark = pytest.mark.xdist_group("shared")

def test_a():
  time.sleep(0.1)

def test_b():
  pass
""",
}

# The inner run's groups named as the suite's conftest names them.
CONFTEST = """
import pytest
import group_timings

@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
  group_timings.name_groups(items)
  return (yield)
"""


def test_the_recorder_writes_each_groups_seconds_end_to_end_apart(pytester, tmp_path):
  pytester.makeconftest(CONFTEST)
  pytester.makepyfile(**MODULES)
  pytester.makeini("[pytest]\nmarkers =\n    e2e: end to end\n")
  path = str(tmp_path / "timings.json")
  result = pytester.inline_run("-p", "no:cacheprovider", plugins=[group_timings.Recorder(path)])
  result.assertoutcome(passed=4)
  with open(path) as file:
    record = json.load(file)
  assert set(record) == {"command", "date", "machine", "wall_seconds", "groups"}
  groups = record["groups"]
  assert list(groups) == ["test_one", "shared"]  # longest first
  assert 1.0 <= groups["test_one"]["e2e"] < 10
  assert 0.1 <= groups["test_one"]["other"] < 1.0
  assert groups["shared"]["e2e"] == 0 and 0.1 <= groups["shared"]["other"] < 1.0
  assert group_timings.recorded(path) == groups


# Tests in groups, in the order collected: a new group (no timing), a short and a long one, and
# one whose end-to-end test is most of its time.
ITEMS = """
import pytest

@pytest.mark.xdist_group("new")
def test_new():
  pass

@pytest.mark.xdist_group("short")
def test_short():
  pass

@pytest.mark.xdist_group("long")
def test_long_first():
  pass

@pytest.mark.xdist_group("heavy")
@pytest.mark.e2e
def test_heavy():
  pass

@pytest.mark.xdist_group("heavy")
def test_light():
  pass

@pytest.mark.xdist_group("long")
def test_long_second():
  pass
"""
TIMINGS = {"short": {"e2e": 0.0, "other": 1.0}, "long": {"e2e": 0.0, "other": 10.0},
           "heavy": {"e2e": 100.0, "other": 0.5}}


def test_groups_go_longest_first_counting_end_to_end_seconds_only_when_they_run(pytester):
  items = pytester.getitems(ITEMS)
  group_timings.name_groups(items)

  def names(items):
    return [item.name for item in group_timings.longest_first(items, TIMINGS)]

  assert names(items) == ["test_heavy", "test_light", "test_long_first", "test_long_second",
                          "test_short", "test_new"]
  fast_tier = [item for item in items if not item.get_closest_marker("e2e")]
  assert names(fast_tier) == ["test_long_first", "test_long_second", "test_short", "test_light",
                              "test_new"]
  assert [item.name for item in group_timings.longest_first(items, {})] == [
      item.name for item in items]  # never recorded: as collected
