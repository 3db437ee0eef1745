#pragma once
/// Parameters by path (seed 004 §3.4): a typed, validated registry. (Being written: issue 13.)
