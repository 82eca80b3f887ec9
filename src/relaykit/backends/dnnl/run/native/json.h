// Reading region programs: a JSON value and its parser (relaykit's dnnl runtime).
//
// A region program (written by relaykit/backends/dnnl/compile/lower.py and fuse.py,
// see run/program.py) is small JSON: objects, arrays, numbers, strings, and the
// non-finite floats Python's json writes (Infinity, -Infinity, NaN). Errors throw
// rk::Error, which the C ABI (capi.cc) reports through rkdnnl_last_error().

#ifndef RKDNNL_JSON_H_
#define RKDNNL_JSON_H_

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rk {

// What the runtime throws for a bad program or an unsupported node.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A JSON value, with the typed accessors lowering reads a program with.
struct Json {
  enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* find(const std::string& key) const {
    for (const auto& f : fields)
      if (f.first == key) return &f.second;
    return nullptr;
  }
  const Json& at(const std::string& key) const {
    const Json* v = find(key);
    if (!v) throw Error("program: missing field '" + key + "'");
    return *v;
  }
  long long i() const {
    if (kind != Num) throw Error("program: expected a number");
    return static_cast<long long>(num);
  }
  double f() const {
    if (kind != Num) throw Error("program: expected a number");
    return num;
  }
  const std::string& s() const {
    if (kind != Str) throw Error("program: expected a string");
    return str;
  }
  std::vector<long long> ints() const {
    if (kind != Arr) throw Error("program: expected an array");
    std::vector<long long> out;
    for (const auto& x : items) out.push_back(x.i());
    return out;
  }
  long long get_i(const std::string& key, long long dflt) const {
    const Json* v = find(key);
    return v ? v->i() : dflt;
  }
  double get_f(const std::string& key, double dflt) const {
    const Json* v = find(key);
    return v ? v->f() : dflt;
  }
};

// The JSON value of `text` (nesting at most 64 deep); throws Error when it is not JSON.
Json parse_json(const char* text);

}  // namespace rk

#endif  // RKDNNL_JSON_H_
