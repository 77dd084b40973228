#include "data/csv.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "tensor/factories.h"

namespace fuselab {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

bool parse_number(const std::string& text, double& value) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  value = std::strtod(begin, &end);
  while (end && (*end == ' ' || *end == '\r' || *end == '\t')) ++end;
  return end != begin && *end == '\0' && errno == 0 && std::isfinite(value);
}

}  // namespace

LabeledData read_csv(const std::string& path, int label_column) {
  std::ifstream file(path);
  check(file.good(), "read_csv ", path, ": cannot open it");
  std::vector<float> features;
  std::vector<int64_t> labels;
  size_t columns = 0;
  std::string line;
  for (int64_t line_number = 1; std::getline(file, line); ++line_number) {
    if (line.empty() || line == "\r") continue;
    const auto fields = split(line);
    std::vector<double> values(fields.size());
    bool numeric = true;
    for (size_t i = 0; i < fields.size(); ++i) numeric &= parse_number(fields[i], values[i]);
    if (!numeric && line_number == 1) continue;  // a header
    check(numeric, "read_csv ", path, " line ", line_number, ": a field is not a number: '", line, "'");
    if (columns == 0) {
      columns = fields.size();
      check(columns >= 2, "read_csv ", path, " line ", line_number, ": needs at least one feature and a label");
      check(label_column < int(columns) && label_column >= -int(columns), "read_csv ", path, ": label column ",
            label_column, " does not exist in ", columns, " columns");
    }
    check(fields.size() == columns, "read_csv ", path, " line ", line_number, ": ", fields.size(),
          " fields, expected ", columns);
    const size_t label_index = label_column < 0 ? columns + label_column : size_t(label_column);
    for (size_t i = 0; i < columns; ++i) {
      if (i != label_index) {
        features.push_back(float(values[i]));
      } else {
        check(values[i] == std::floor(values[i]) && values[i] >= 0, "read_csv ", path, " line ", line_number,
              ": label ", fields[i], " is not a non-negative integer");
        labels.push_back(int64_t(values[i]));
      }
    }
  }
  check(!labels.empty(), "read_csv ", path, ": no data rows");
  const int64_t rows = int64_t(labels.size());
  return {from_vector<float>(features, {rows, int64_t(columns) - 1}), from_vector<int64_t>(labels, {rows})};
}

}  // namespace fuselab
