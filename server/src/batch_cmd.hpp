#pragma once
/// platoon batch. (Being written: issue 13.)
