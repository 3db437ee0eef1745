# Included by ctest after the discovered doctest cases (TEST_INCLUDE_FILES): tests whose figures are
# timing claims run with no other test beside them, so that `ctest -j2` on a 2-core machine measures the
# claim and not the neighbour. A test renamed here must be renamed in its source too. They carry the label
# "timing": the sanitized suite (scripts/sanitize.sh, `ctest -LE timing`) leaves them out, as its 2-5x
# slowdown would miss the wall-clock figures they assert.
foreach(_name
    "recording: 30 s of configs/drivers.toml read completely by @mcap/core with the SUMMARY's counts, and a recorder killed -9 at a random moment keeps every message older than 100 ms"
    "flood: 50,000 messages to each socket in turn: no node lost, world-state gaps within two broadcast periods, observer error in bound"
    "join time: a drifting node's clock is within 100 us of the server's well under 3 s after its start, and never steps after"
    "peer limits over loopback: 2,000 join-and-disconnect cycles of new names, then a real node joins within 2 s"
    "peer limits over loopback: 50 connections x 1,000 status requests are held to the address's budget, RSS and the broadcast unharmed"
    "seat sound: the SDL disk audio driver file follows rpm within 5 percent over a scripted run-up")
  set_tests_properties("${_name}" PROPERTIES RUN_SERIAL TRUE LABELS timing)
endforeach()

# Tests whose processes must keep up with real time (four HDL-64E lidar hosts and a fusion node streaming,
# with a bound on the gap between fused frames): correct at any speed, but under the sanitizers' slowdown the
# hosts cannot scan at 10 Hz, or the fusion node cannot fuse within the bound, on two cores shared with
# another test (docs/TESTING.md, "The sanitized suite"). Label "realtime": scripts/sanitize.sh leaves them
# out as it does "timing"; ctest runs them as usual.
foreach(_name
    "netns lab: four lidar hosts, fusion, ego and server as separate hosts stream and fuse across namespaces"
    "fusion farm: kill -9 of a lidar host leaves 3 sources within a timeout, its restart brings 4 back, never mixed")
  set_tests_properties("${_name}" PROPERTIES LABELS realtime)
endforeach()

# Tests that run a whole lidar farm (four to five lidar hosts, a fusion node, an ego and a server: seven
# or more processes, most of them casting rays): no two of them side by side. Two farms at once on a
# 2-core machine with another load (scripts/stress_suite.sh) ran 4x slower than one, and a lidar host then
# missed the launcher's 5 s stop grace. Each still runs beside any other test.
foreach(_name
    "lock-step lidar farm: with 20 ms receive delay on every process, every fused frame has all four sources of its own cycle"
    "lock-step lidar farm: without faults, every fused frame has all four sources of its own cycle"
    "ros2 live: a lock-step lidar farm recorded with ros2 = true is decoded by the independent reader with Autoware point fields and the session file mounts"
    "netns lab: four lidar hosts, fusion, ego and server as separate hosts stream and fuse across namespaces"
    "fusion farm: kill -9 of a lidar host leaves 3 sources within a timeout, its restart brings 4 back, never mixed")
  set_tests_properties("${_name}" PROPERTIES RESOURCE_LOCK lidar_farm)
endforeach()

# The network-namespace lab creates and removes namespaces, veth links and a bridge, kernel work done under
# the kernel's networking lock and on its workers. Two server stalls seen under load (6.4 s within a
# restarted server's start, 6.5 s in a running session, while the sessions' nodes kept time) both came
# while it ran beside the stalled test; whether it caused them is not known (the server's loop watchdog
# names where the next one is held). A lab does not rebuild its network during a
# session, so the test runs alone: its kernel work is not charged to a neighbour's timing claims.
set_tests_properties("netns lab: four lidar hosts, fusion, ego and server as separate hosts stream and fuse across namespaces"
                     PROPERTIES RUN_SERIAL TRUE)

# The CAN closed loop runs an ECU process against a seat in lock-step on the sim clock (every 10 ms of sim
# time the seat waits, up to 5 s, for the ECU's answer): correct at any speed, but 4,000 round trips
# between two processes; a generous timeout under the sanitizers' slowdown.
set_tests_properties("can seat: an ECU process keeps the car on configs/roads/ring.toml within 0.3 m lateral RMS over UDP and the seat brakes to a stop when it falls silent"
                     PROPERTIES TIMEOUT 300)

# platoon study end to end (tests/integration/study_test.cpp): 24 lock-step blocks of `platoon run` one after
# the other, and an operator's flow of four blocks; well within a minute each on two idle cores, a generous
# timeout beside other tests and under the sanitizers.
set_tests_properties(
    "study: 4 participants x 3 blocks in a Latin square run unattended in lock-step with complete folders every marker and the same summary twice"
    "study: the operator starts a block with study ctl next then repeats it and aborts the next with a reason in study_log.csv"
    PROPERTIES TIMEOUT 300)

# A 450 MB log written and read by a child process whose peak RSS is the claim: alone, so that its disk and
# page-cache traffic neither slows nor is slowed by a neighbour (it takes about 10 s on two cores).
set_tests_properties("log reader: a 450 MB log is read whole and sought to its middle with peak RSS under 200 MB"
                     PROPERTIES RUN_SERIAL TRUE)
