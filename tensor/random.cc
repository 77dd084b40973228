#include "tensor/random.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fuselab {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

void Generator::manual_seed(uint64_t seed) {
  for (uint64_t& word : state_) word = splitmix64(seed);
  has_cached_normal_ = false;
}

uint64_t Generator::next_u64() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

Generator::State Generator::state() const {
  uint64_t normal_bits;
  std::memcpy(&normal_bits, &cached_normal_, sizeof normal_bits);
  return {state_[0], state_[1], state_[2], state_[3], normal_bits, has_cached_normal_ ? 1u : 0u};
}

void Generator::set_state(const State& state) {
  std::copy(state.begin(), state.begin() + 4, state_);
  std::memcpy(&cached_normal_, &state[4], sizeof cached_normal_);
  has_cached_normal_ = state[5] != 0;
}

double Generator::uniform() { return double(next_u64() >> 11) * 0x1.0p-53; }

double Generator::normal() {
  if (has_cached_normal_) {
    has_cached_normal_ = false;
    return cached_normal_;
  }
  // Box-Muller: two uniforms give two independent normals; keep the second for next time.
  const double u1 = 1.0 - uniform();  // (0, 1], so log is finite
  const double u2 = uniform();
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * M_PI * u2;
  cached_normal_ = radius * std::sin(angle);
  has_cached_normal_ = true;
  return radius * std::cos(angle);
}

Generator& default_generator() {
  thread_local Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace fuselab
