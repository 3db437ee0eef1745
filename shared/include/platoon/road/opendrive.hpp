#pragma once
// OpenDRIVE (.xodr) export and import of platoon roads (shared/src/road/opendrive.cpp).
