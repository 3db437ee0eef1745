// Parameters by path in a live session (issue 13).
