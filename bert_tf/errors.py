"""The one exception type for mistakes a user can fix (bad flags, files, vocabularies)."""


class UserError(ValueError):
  """A problem with the user's input, reported as one line and exit status 2."""
