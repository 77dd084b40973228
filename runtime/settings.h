// FuseLab's settings: the FUSELAB_* environment variables, each with one meaning, read by one
// parser once, on first use (never before main). A value the parser does not accept is a
// fuselab::Error naming the variable, the value and what it accepts, thrown by every call that
// needs the settings, so a typo never passes silently. docs/settings.md lists the same table.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace fuselab::runtime {

struct Settings {
  int num_threads = 0;                     // FUSELAB_NUM_THREADS; 0: every core
  std::string cpu_gemm;                    // FUSELAB_CPU_GEMM: "" (by size), "openblas" or "onednn"
  std::string openblas;                    // FUSELAB_OPENBLAS: "" (Debian's builds) or the library to load
  bool avx512 = true;                      // FUSELAB_DISABLE_AVX512=1: false
  bool fusion = true;                      // FUSELAB_FUSION=0: false
  std::set<std::string> disabled_fusions;  // FUSELAB_DISABLE_FUSIONS=name,name
  bool fusion_log = false;                 // FUSELAB_FUSION_LOG=1: true
  bool cuda_sync = false;                  // FUSELAB_CUDA_SYNC=1: true
  bool allow_tf32 = false;                 // FUSELAB_ALLOW_TF32=1: true
  double dist_timeout_s = 300;             // FUSELAB_DIST_TIMEOUT_S
};

// One row of the settings table: the variable, the values it takes and what it means.
struct SettingInfo {
  const char* name;
  const char* values;
  const char* meaning;
};
const std::vector<SettingInfo>& setting_table();

// Parses the settings from `lookup` (a variable's value, or null when it is unset). Throws
// fuselab::Error for a value it does not accept, or for a FUSELAB_* name in `names` that is not a
// setting (a misspelt variable would otherwise be ignored).
using Lookup = std::function<const char*(const char* name)>;
Settings parse_settings(const Lookup& lookup, const std::vector<std::string>& names = {});

// The process's settings, parsed from the environment on the first call and kept.
const Settings& settings();

}  // namespace fuselab::runtime
