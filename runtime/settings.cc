#include "runtime/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/error.h"

extern char** environ;

namespace fuselab::runtime {
namespace {

const std::vector<SettingInfo> kTable = {
    {"FUSELAB_NUM_THREADS", "an integer in [1, 4096]",
     "threads of the CPU kernels and OpenBLAS; unset: every core"},
    {"FUSELAB_CPU_GEMM", "openblas | onednn",
     "the library of every CPU GEMM; unset: oneDNN (float32 only on AVX-512 CPUs), OpenBLAS for the rest, small "
     "float32 and every float64 GEMM"},
    {"FUSELAB_OPENBLAS", "a library path or file name",
     "the OpenBLAS to load on the first GEMM; unset: Debian's OpenMP build, then libopenblas.so.0"},
    {"FUSELAB_DISABLE_AVX512", "0 | 1", "1: on an AVX-512 machine the CPU kernels run their AVX2 or baseline copies"},
    {"FUSELAB_FUSION", "0 | 1", "0: no Sequential fuses (the unfused ops run one by one)"},
    {"FUSELAB_DISABLE_FUSIONS", "names, comma-separated",
     "these registered fusions never fire (a name no fusion has is not an error: a program may register it later)"},
    {"FUSELAB_FUSION_LOG", "0 | 1", "1: every Sequential prints what each fusion function matched, once per list"},
    {"FUSELAB_CUDA_SYNC", "0 | 1", "1: synchronize after every CUDA launch, so an error names its kernel"},
    {"FUSELAB_ALLOW_TF32", "0 | 1", "1: float32 CUDA GEMMs may run on TF32 tensor cores"},
    {"FUSELAB_DIST_TIMEOUT_S", "a number of seconds > 0",
     "how long a data-parallel collective waits for the other ranks; unset: 300"},
};

[[noreturn]] void refuse(const char* name, const char* value) {
  std::string accepted = "?";
  for (const SettingInfo& info : kTable) {
    if (std::strcmp(info.name, name) == 0) accepted = info.values;
  }
  throw Error(std::string(name) + "='" + value + "' is not a valid value; it takes " + accepted +
              " (docs/settings.md)");
}

// "0" or "1"; anything else (yes, true, an empty string) is refused rather than guessed.
bool parse_switch(const char* name, const char* value, bool unset) {
  if (!value) return unset;
  if (std::strcmp(value, "0") == 0) return false;
  if (std::strcmp(value, "1") == 0) return true;
  refuse(name, value);
}

int parse_threads(const char* name, const char* value) {
  if (!value) return 0;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || errno != 0 || n < 1 || n > 4096) refuse(name, value);
  return int(n);
}

double parse_seconds(const char* name, const char* value, double unset) {
  if (!value) return unset;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(value, &end);
  if (end == value || *end != '\0' || errno != 0 || !std::isfinite(s) || s <= 0) refuse(name, value);
  return s;
}

std::string parse_gemm(const char* name, const char* value) {
  if (!value) return "";
  if (std::strcmp(value, "openblas") == 0 || std::strcmp(value, "onednn") == 0) return value;
  refuse(name, value);
}

std::string parse_path(const char* name, const char* value) {
  if (!value) return "";
  if (!*value) refuse(name, value);
  return value;
}

// Names separated by commas; spaces around them are dropped, and an empty list is refused.
std::set<std::string> parse_names(const char* name, const char* value) {
  std::set<std::string> names;
  if (!value) return names;
  std::string item;
  for (const char* c = value;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!item.empty()) names.insert(item);
      item.clear();
      if (*c == '\0') break;
    } else if (*c != ' ') {
      item += *c;
    }
  }
  if (names.empty()) refuse(name, value);
  return names;
}

std::vector<std::string> fuselab_names_in_environment() {
  std::vector<std::string> names;
  for (char** entry = environ; entry && *entry; ++entry) {
    const char* equals = std::strchr(*entry, '=');
    if (std::strncmp(*entry, "FUSELAB_", 8) == 0 && equals) names.emplace_back(*entry, size_t(equals - *entry));
  }
  return names;
}

}  // namespace

const std::vector<SettingInfo>& setting_table() { return kTable; }

Settings parse_settings(const Lookup& lookup, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    bool known = false;
    for (const SettingInfo& info : kTable) known = known || name == info.name;
    if (!known) throw Error(name + " is not a FuseLab setting; the settings are listed in docs/settings.md");
  }
  Settings s;
  s.num_threads = parse_threads("FUSELAB_NUM_THREADS", lookup("FUSELAB_NUM_THREADS"));
  s.cpu_gemm = parse_gemm("FUSELAB_CPU_GEMM", lookup("FUSELAB_CPU_GEMM"));
  s.openblas = parse_path("FUSELAB_OPENBLAS", lookup("FUSELAB_OPENBLAS"));
  s.avx512 = !parse_switch("FUSELAB_DISABLE_AVX512", lookup("FUSELAB_DISABLE_AVX512"), false);
  s.fusion = parse_switch("FUSELAB_FUSION", lookup("FUSELAB_FUSION"), true);
  s.disabled_fusions = parse_names("FUSELAB_DISABLE_FUSIONS", lookup("FUSELAB_DISABLE_FUSIONS"));
  s.fusion_log = parse_switch("FUSELAB_FUSION_LOG", lookup("FUSELAB_FUSION_LOG"), false);
  s.cuda_sync = parse_switch("FUSELAB_CUDA_SYNC", lookup("FUSELAB_CUDA_SYNC"), false);
  s.allow_tf32 = parse_switch("FUSELAB_ALLOW_TF32", lookup("FUSELAB_ALLOW_TF32"), false);
  s.dist_timeout_s = parse_seconds("FUSELAB_DIST_TIMEOUT_S", lookup("FUSELAB_DIST_TIMEOUT_S"), 300);
  return s;
}

// A failed parse leaves the static unset, so every later call throws the same error again.
const Settings& settings() {
  static const Settings parsed =
      parse_settings([](const char* name) -> const char* { return std::getenv(name); }, fuselab_names_in_environment());
  return parsed;
}

}  // namespace fuselab::runtime
