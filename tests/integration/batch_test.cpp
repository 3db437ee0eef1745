// platoon batch (issue 13).
