#include "data/csv.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "tensor/factories.h"
#include "tensor/parse_number.h"

namespace fuselab {
namespace {

// Labels are class ids; a bound keeps a typo such as 1e30 from wrapping an int64 or sizing a
// classifier with billions of outputs.
constexpr int64_t kLabelLimit = 1 << 20;

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// A field as a double, ignoring the blanks around it.
bool parse_number(const std::string& text, double& value) {
  const size_t begin = text.find_first_not_of(" \t\r"), end = text.find_last_not_of(" \t\r");
  if (begin == std::string::npos) return false;
  const std::optional<double> number = parse_double(std::string_view(text).substr(begin, end - begin + 1));
  if (number) value = *number;
  return number.has_value();
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
        check(std::fabs(values[i]) <= std::numeric_limits<float>::max(), "read_csv ", path, " line ", line_number,
              ": value ", fields[i], " does not fit in float32");
        features.push_back(float(values[i]));
      } else {
        check(values[i] == std::floor(values[i]) && values[i] >= 0 && values[i] < double(kLabelLimit), "read_csv ", path,
              " line ", line_number, ": label ", fields[i], " is not a class id (an integer in [0, ", kLabelLimit,
              "))");
        labels.push_back(int64_t(values[i]));
      }
    }
  }
  check(!labels.empty(), "read_csv ", path, ": no data rows");
  const int64_t rows = int64_t(labels.size());
  return {from_vector<float>(features, {rows, int64_t(columns) - 1}), from_vector<int64_t>(labels, {rows})};
}

}  // namespace fuselab
