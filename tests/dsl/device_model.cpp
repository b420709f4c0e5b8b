// The device model's presets and its fit rules, which every plan is checked against.
#include <catch2/catch.hpp>

#include <ptxdsl/dsl.hpp>

#include <set>
#include <string>

using namespace ptxdsl;

TEST_CASE("device presets name every limit a planner reads") {
  std::set<std::string> names;
  for (const DeviceModel& m : device_presets()) {
    INFO(m.name);
    CHECK(names.insert(m.name).second);
    CHECK(m.sm_count > 0);
    CHECK(m.max_threads_per_sm >= m.max_threads_per_block);
    CHECK(m.max_threads_per_block == 1024);
    CHECK(m.max_blocks_per_sm > 0);
    CHECK(m.registers_per_sm == 65536);
    CHECK(m.shared_per_block <= m.shared_per_block_optin);
    CHECK(m.shared_per_block_optin + m.shared_reserved_per_block <= m.shared_per_sm);
    CHECK(m.l2_bytes > 0);
    CHECK(m.has_clusters() == (m.arch() != Arch::Sm80));
    CHECK(m.summary().find(m.name) == 0);
  }
  for (const char* required : {"h200", "h100", "a100", "l40s", "rtx4090", "b200"}) {
    CHECK(names.count(required) == 1);
  }
  CHECK(default_device().name == "h200");
}

TEST_CASE("the consumer parts have the small shared memory that staged rows must fit") {
  // cc 8.6 and 8.9: 99 KB a block, 1536 threads an SM; the data-centre parts 163 or 227 KB.
  CHECK(device_preset("rtx4090").shared_per_block_optin == 99 * 1024);
  CHECK(device_preset("l40s").max_threads_per_sm == 1536);
  CHECK(device_preset("a100").shared_per_block_optin == 163 * 1024);
  CHECK(device_preset("h200").shared_per_block_optin == 232448);
  CHECK(device_preset("b200").arch() == Arch::Sm100);
  CHECK(device_preset("l40s").arch() == Arch::Sm80);
}

TEST_CASE("an unknown preset or an old device is refused by name") {
  CHECK_THROWS_WITH(device_preset("v100"),
                    Catch::Contains("device must be one of h200") && Catch::Contains("got 'v100'"));
  CHECK_THROWS_WITH(arch_for_compute_capability(7, 5),
                    Catch::Contains("8.0 or newer") && Catch::Contains("got 7.5"));
  CHECK(arch_for_compute_capability(8, 6) == Arch::Sm80);
  CHECK(arch_for_compute_capability(9, 0) == Arch::Sm90);
  CHECK(arch_for_compute_capability(12, 0) == Arch::Sm100);
  // The newest target each runs, and what runs where: an `a` target on its own chip only.
  CHECK(newest_arch_for_compute_capability(8, 6) == Arch::Sm80);
  CHECK(newest_arch_for_compute_capability(8, 9) == Arch::Sm89);
  CHECK(newest_arch_for_compute_capability(9, 0) == Arch::Sm90a);
  CHECK(newest_arch_for_compute_capability(10, 0) == Arch::Sm100a);
  CHECK(newest_arch_for_compute_capability(12, 0) == Arch::Sm100);
  CHECK(device_preset("rtx4090").runs(Arch::Sm89));
  CHECK_FALSE(device_preset("a100").runs(Arch::Sm89));
  CHECK(device_preset("h100").runs(Arch::Sm90a));
  CHECK_FALSE(device_preset("h100").runs(Arch::Sm100));
  CHECK_FALSE(device_preset("b200").runs(Arch::Sm90a));
  CHECK(device_preset("b200").runs(Arch::Sm100a));
}

TEST_CASE("blocks per SM follow threads, registers and shared memory") {
  const DeviceModel& h200 = device_preset("h200");
  CHECK(h200.blocks_per_sm(256, 32, 0) == 8);   // 2048 threads an SM
  CHECK(h200.blocks_per_sm(256, 64, 0) == 4);   // 64K registers
  CHECK(h200.blocks_per_sm(256, 255, 0) == 1);  // 256 × 256 registers, granted in eights
  CHECK(h200.blocks_per_sm(32, 16, 0) == 32);   // blocks an SM
  CHECK(h200.blocks_per_sm(256, 32, 100 * 1024) == 2);
  CHECK(h200.blocks_per_sm(1024, 32, 0) == 2);
  const DeviceModel& rtx = device_preset("rtx4090");
  CHECK(rtx.blocks_per_sm(1024, 32, 0) == 1);  // 1536 threads an SM
  CHECK(rtx.blocks_per_sm(256, 32, 40 * 1024) == 2);
  CHECK(rtx.blocks_per_sm(256, 32, 120 * 1024) == 0);
}

TEST_CASE("a block that does not fit says which limit and by how much") {
  const DeviceModel& rtx = device_preset("rtx4090");
  CHECK_FALSE(rtx.block_misfit(256, 64, 99 * 1024));
  CHECK_THAT(*rtx.block_misfit(256, 64, 100 * 1024),
             Catch::Contains("102400 bytes of shared memory") &&
                 Catch::Contains("rtx4090 allows at most 101376"));
  CHECK_THAT(*rtx.block_misfit(2048, 32, 0), Catch::Contains("1 to 1024"));
  CHECK_THAT(*rtx.block_misfit(1024, 128, 0), Catch::Contains("131072 registers"));
  CHECK_THAT(*rtx.block_misfit(64, 256, 0), Catch::Contains("at most 255"));
}
