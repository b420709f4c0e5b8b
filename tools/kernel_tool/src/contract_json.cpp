#include "ptxdsl/cli/contract_json.hpp"

#include <algorithm>

namespace ptxdsl::cli {
namespace {

void write_param(JsonWriter& j, const ParamSpec& p) {
  j.begin_object(true);
  j.field("name", p.name);
  j.field("type", ptx_name(p.type));
  j.field("bytes", p.size_bytes());
  j.field("pointer", p.pointer);
  if (p.pointer) {
    j.field("element", ptx_name(p.element));
    // The byte alignment the kernel's accesses through it need, and the scalar that steps its rows.
    j.field("align", std::max(1u, p.align_bytes));
    if (!p.row_stride.empty()) j.field("row_stride", p.row_stride);
  } else if (p.tensor_map) {
    j.field("tensor_map", true);  // 128 bytes: the definition's tensor_maps describe it
  } else if (p.multiple > 1) {
    j.field("multiple", p.multiple);  // so that every row of the pointers it steps stays aligned
  }
  j.end_object();
}

}  // namespace

void write_contract_fields(JsonWriter& j, const KernelContract& c, Dim3 block) {
  j.field("entry", c.entry);
  j.key("params").begin_array();
  for (const ParamSpec& p : c.params) write_param(j, p);
  j.end_array();
  j.key("block").begin_array(true).value(block.x).value(block.y).value(block.z).end_array();
  j.field("block_required", c.block_required);
  j.field("static_shared_bytes", c.static_shared_bytes);
  j.field("dynamic_shared_bytes", c.dynamic_shared_bytes);
  if (c.waits_for_prior_grid) j.field("waits_for_prior_grid", true);
  // Thread-block clusters: the CTAs of one (.reqnctapercluster; the grid a whole number of them).
  if (c.cluster.count() != 0) {
    j.key("cluster").begin_array(true).value(c.cluster.x).value(c.cluster.y).value(c.cluster.z);
    j.end_array();
  }
  if (c.explicit_cluster) j.field("explicit_cluster", true);
}

void write_ptx_field(JsonWriter& j, const std::string& ptx, const std::string& ptx_file) {
  if (ptx_file.empty()) {
    j.field("ptx", ptx);
  } else {
    j.field("ptx_file", ptx_file);
  }
}

}  // namespace ptxdsl::cli
