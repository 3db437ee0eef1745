// Scenario events in sessions (issue 13).
