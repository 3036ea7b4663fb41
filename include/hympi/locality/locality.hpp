#pragma once
// The locality layer in one include: locations, regions and tasks on them, distributed arrays,
// memory policies and page placement (docs/locality.md).
#include "hympi/locality/distributed_array.hpp"
#include "hympi/locality/distribution.hpp"
#include "hympi/locality/locations.hpp"
#include "hympi/locality/membind.hpp"
#include "hympi/locality/region.hpp"
