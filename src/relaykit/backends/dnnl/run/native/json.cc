// The JSON parser of region programs (see json.h).

#include "json.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace rk {

namespace {

class JsonParser {
 public:
  explicit JsonParser(const char* text) : p_(text) {}
  Json parse() {
    Json v = value(0);
    ws();
    if (*p_) fail("trailing characters");
    return v;
  }

 private:
  const char* p_;
  [[noreturn]] void fail(const char* what) { throw Error(std::string("program JSON: ") + what); }
  void ws() {
    while (*p_ == ' ' || *p_ == '\n' || *p_ == '\t' || *p_ == '\r') ++p_;
  }
  Json value(int depth) {
    if (depth > 64) fail("nested too deeply");
    ws();
    Json v;
    char c = *p_;
    if (c == '{') {
      v.kind = Json::Obj;
      ++p_;
      ws();
      if (*p_ == '}') { ++p_; return v; }
      while (true) {
        ws();
        if (*p_ != '"') fail("expected a key");
        std::string key = string();
        ws();
        if (*p_++ != ':') fail("expected ':'");
        v.fields.emplace_back(std::move(key), value(depth + 1));
        ws();
        if (*p_ == ',') { ++p_; continue; }
        if (*p_ == '}') { ++p_; break; }
        fail("expected ',' or '}'");
      }
    } else if (c == '[') {
      v.kind = Json::Arr;
      ++p_;
      ws();
      if (*p_ == ']') { ++p_; return v; }
      while (true) {
        v.items.push_back(value(depth + 1));
        ws();
        if (*p_ == ',') { ++p_; continue; }
        if (*p_ == ']') { ++p_; break; }
        fail("expected ',' or ']'");
      }
    } else if (c == '"') {
      v.kind = Json::Str;
      v.str = string();
    } else if (!strncmp(p_, "true", 4)) {
      v.kind = Json::Bool; v.num = 1; p_ += 4;
    } else if (!strncmp(p_, "false", 5)) {
      v.kind = Json::Bool; v.num = 0; p_ += 5;
    } else if (!strncmp(p_, "null", 4)) {
      p_ += 4;
    } else if (!strncmp(p_, "Infinity", 8) || !strncmp(p_, "-Infinity", 9) || !strncmp(p_, "NaN", 3)) {
      // Python's json writes non-finite floats (clip bounds) so.
      v.kind = Json::Num;
      bool neg = c == '-';
      v.num = c == 'N' ? std::nan("") : neg ? -HUGE_VAL : HUGE_VAL;
      p_ += c == 'N' ? 3 : neg ? 9 : 8;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      char* end = nullptr;
      v.kind = Json::Num;
      v.num = strtod(p_, &end);
      if (end == p_) fail("bad number");
      p_ = end;
    } else {
      fail("unexpected character");
    }
    return v;
  }
  std::string string() {
    ++p_;  // opening quote
    std::string out;
    while (*p_ && *p_ != '"') {
      if (*p_ == '\\') {
        ++p_;
        if (!*p_) break;
        char e = *p_;
        out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
        ++p_;
      } else {
        out.push_back(*p_++);
      }
    }
    if (*p_ != '"') fail("unterminated string");
    ++p_;
    return out;
  }
};

}  // namespace

Json parse_json(const char* text) { return JsonParser(text).parse(); }

}  // namespace rk
