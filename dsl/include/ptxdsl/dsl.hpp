#pragma once

// Everything a kernel author needs: `#include <ptxdsl/dsl.hpp>`. The building blocks (element
// I/O, vector widths, the row map, one row a CTA, reductions, math) come with it.
#include "ptxdsl/dsl/arch.hpp"
#include "ptxdsl/dsl/blocks/cluster_start.hpp"
#include "ptxdsl/dsl/blocks/element_io.hpp"
#include "ptxdsl/dsl/blocks/math.hpp"
#include "ptxdsl/dsl/blocks/reduce_op.hpp"
#include "ptxdsl/dsl/blocks/row_map.hpp"
#include "ptxdsl/dsl/blocks/row_per_cta.hpp"
#include "ptxdsl/dsl/blocks/vector.hpp"
#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/device_model.hpp"
#include "ptxdsl/dsl/emit.hpp"
#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/dsl/kernel.hpp"
#include "ptxdsl/dsl/memory.hpp"
#include "ptxdsl/dsl/module.hpp"
#include "ptxdsl/dsl/operators.hpp"
#include "ptxdsl/dsl/reduce.hpp"
#include "ptxdsl/dsl/reg.hpp"
#include "ptxdsl/dsl/types.hpp"
