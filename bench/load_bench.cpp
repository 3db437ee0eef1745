// Server capacity (issue 16 item 4): N simulated nodes in one process against a real platoon-server,
// beside a PUB/SUB floor in the same run. Work in progress.
int main() { return 0; }
