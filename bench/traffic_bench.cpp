// Road traffic at scale (issue 16 item 5): vehicles per core at the traffic role's rate and the update
// latency on a receiver. Work in progress.
int main() { return 0; }
