#pragma once
/// Scenario events and triggers ([[event]] in a session file). (Being written: issue 13.)
