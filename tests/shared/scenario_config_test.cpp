// [[event]] parsing (issue 13).
