#include "examples/word_examples.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>

#include "autograd/functional.h"
#include "tensor/factories.h"

namespace fuselab::examples {
namespace {

char to_char(int64_t id) { return id == 0 ? '.' : char('a' + id - 1); }

}  // namespace

std::vector<std::string> read_words(const std::string& path, uint64_t seed) {
  std::ifstream file(path);
  check(file.good(), "charlm: cannot open the word list ", path,
        (path == "/usr/share/dict/words" ? " (apt-get install wamerican)" : ""));
  std::set<std::string> unique;
  std::string line;
  while (std::getline(file, line)) {
    std::string word;
    bool ok = !line.empty();
    for (char c : line) {
      if (c == '\r') continue;
      const char lower = char(std::tolower(static_cast<unsigned char>(c)));
      ok &= lower >= 'a' && lower <= 'z';
      word += lower;
    }
    if (ok) unique.insert(word);
  }
  check(unique.size() >= 10, "charlm: ", path, " has only ", unique.size(), " usable words (a-z, one per line)");
  std::vector<std::string> words(unique.begin(), unique.end());
  Generator gen(seed);
  for (size_t i = words.size() - 1; i > 0; --i) std::swap(words[i], words[gen.next_u64() % (i + 1)]);
  return words;
}

Examples make_examples(const std::vector<std::string>& words, int64_t context) {
  std::vector<int64_t> contexts, targets;
  for (const std::string& word : words) {
    std::vector<int64_t> window(size_t(context), 0);
    for (size_t i = 0; i <= word.size(); ++i) {
      const int64_t next = i < word.size() ? word[i] - 'a' + 1 : 0;
      contexts.insert(contexts.end(), window.begin(), window.end());
      targets.push_back(next);
      window.erase(window.begin());
      window.push_back(next);
    }
  }
  const int64_t n = int64_t(targets.size());
  return {from_vector<int64_t>(contexts, {n, context}), from_vector<int64_t>(targets, {n})};
}

double evaluate(Sequential& model, const Examples& data, Device device) {
  NoGradGuard no_grad;
  model.eval();
  const int64_t n = data.targets.size(0), chunk = 4096;
  double total = 0;
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t end = std::min(n, start + chunk);
    const Tensor loss = cross_entropy(model(data.contexts.slice(start, end).to(device)),
                                      data.targets.slice(start, end).to(device));
    total += loss.item() * double(end - start);
  }
  model.train();
  return total / double(n);
}

double unigram_loss(const Examples& train, const Examples& val) {
  std::vector<double> counts(kWordVocab, 1.0);  // add-one smoothing
  for (int64_t t : train.targets.to_vector<int64_t>()) counts[size_t(t)] += 1;
  double total = 0;
  for (double c : counts) total += c;
  double loss = 0;
  const auto targets = val.targets.to_vector<int64_t>();
  for (int64_t t : targets) loss -= std::log(counts[size_t(t)] / total);
  return loss / double(targets.size());
}

std::string sample_word(Sequential& model, int64_t context, Generator& gen, Device device) {
  NoGradGuard no_grad;
  std::vector<int64_t> window(size_t(context), 0);
  std::string word;
  while (word.size() < 30) {
    const Tensor logits = model(from_vector<int64_t>(window, {1, context}).to(device)).to(Device::cpu());
    const auto probs = softmax(logits).to_vector<float>();
    double u = gen.uniform(), acc = 0;
    int64_t next = kWordVocab - 1;
    for (int64_t i = 0; i < kWordVocab; ++i) {
      acc += probs[size_t(i)];
      if (u < acc) {
        next = i;
        break;
      }
    }
    if (next == 0) break;
    word += to_char(next);
    window.erase(window.begin());
    window.push_back(next);
  }
  return word;
}

}  // namespace fuselab::examples
