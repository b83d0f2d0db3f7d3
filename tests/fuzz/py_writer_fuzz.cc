// libFuzzer target: the Python-literal writer. Builds a value from the
// input bytes (strings taken from the input), prints it, and checks that
// the output is ASCII and that every string literal in it decodes to exactly
// one of the strings put in, in order: no name can close a string early or
// inject code.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "emit/py_value.h"
#include "ir/format.h"
#include "ir/parser.h"

namespace {

using retc::emit::PyValue;

struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::string str() {
    size_t len = byte() % 24;
    std::string s;
    while (len-- > 0 && n > 0) s += static_cast<char>(byte());
    return s;
  }
};

PyValue make(Reader& r, std::vector<std::string>& strings, int depth) {
  switch (r.byte() % (depth > 6 ? 5 : 8)) {
    case 0:
      return PyValue();
    case 1:
      return PyValue(static_cast<bool>(r.byte() & 1));
    case 2:
      return PyValue(static_cast<int64_t>(static_cast<int8_t>(r.byte())) * 1000003);
    case 3:
      return PyValue(static_cast<double>(static_cast<int8_t>(r.byte())) / 7.0);
    case 4: {
      std::string s = r.str();
      strings.push_back(retc::ir::valid_utf8(s));
      return PyValue(s);
    }
    case 5:
    case 6: {
      std::vector<PyValue> items;
      for (int k = r.byte() % 5; k > 0; --k) items.push_back(make(r, strings, depth + 1));
      return r.byte() & 1 ? PyValue::list(std::move(items)) : PyValue::tuple(std::move(items));
    }
    default: {
      PyValue d = PyValue::dict();
      for (int k = r.byte() % 5; k > 0; --k) {
        std::string key = r.str();
        bool fresh = !d.get(key);
        size_t at = strings.size();
        PyValue v = make(r, strings, depth + 1);
        if (fresh) {
          strings.insert(strings.begin() + at, retc::ir::valid_utf8(key));
        } else {
          // set() replaces the earlier value in place; keep the check simple.
          strings.resize(at);
          continue;
        }
        d.set(key, std::move(v));
      }
      return d;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  std::vector<std::string> strings;
  PyValue v = make(r, strings, 0);
  std::string out = retc::emit::format_assignment("x", v);
  std::vector<std::string> found;
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<unsigned char>(out[i]) >= 0x80) std::abort();
    if (out[i] != '"') continue;
    size_t j = i + 1;
    while (j < out.size() && out[j] != '"') {
      if (out[j] == '\n') std::abort();
      j += out[j] == '\\' ? 2 : 1;
    }
    if (j >= out.size()) std::abort();
    auto s = retc::ir::unquote(out.substr(i, j - i + 1));
    if (!s.ok()) std::abort();
    found.push_back(*s);
    i = j;
  }
  if (found != strings) std::abort();
  return 0;
}
