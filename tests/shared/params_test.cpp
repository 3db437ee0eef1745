// Parameters by path (issue 13).
