"""The test suite: one package, so a module another test imports (tests.test_capture) is the
module pytest collected, imported and assertion-rewritten once."""
