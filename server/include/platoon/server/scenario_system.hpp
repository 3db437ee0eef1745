#pragma once
/// The scenario system: evaluates [[event]] conditions on the merged world. (Being written: issue 13.)
