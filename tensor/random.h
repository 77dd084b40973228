// A seeded random generator that gives the same numbers on every machine and thread count:
// xoshiro256** seeded through splitmix64, consumed sequentially, Box-Muller for normals.
#pragma once

#include <array>
#include <cstdint>

namespace fuselab {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(uint64_t seed);

  uint64_t next_u64();
  double uniform();  // [0, 1) with 53 random bits
  double normal();   // mean 0, standard deviation 1

  // The whole state, for checkpoints: the four xoshiro256** words, then the cached normal's bits
  // and whether one is cached. After set_state(s) the generator draws what it drew after state() gave s.
  using State = std::array<uint64_t, 6>;
  State state() const;
  void set_state(const State& state);

 private:
  uint64_t state_[4];
  double cached_normal_ = 0;
  bool has_cached_normal_ = false;
};

// The generator factories use when none is given; seed it with manual_seed().
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace fuselab
