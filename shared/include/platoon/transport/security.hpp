#pragma once
// CURVE keys and the ZAP handler (shared/src/transport/security.cpp).
