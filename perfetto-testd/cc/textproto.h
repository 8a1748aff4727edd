// Protobuf text format to wire format, for TraceConfig, with the schema
// that build.rs reads from the SDK's protozero classes (schema.inc). The
// amalgamated SDK has no text-format parser of its own.
//
// What it takes: `name: value`, `name { ... }` / `name < ... >` (the colon
// optional before a message), lists `name: [a, b]`, `#` comments, `;` or `,`
// after a field, strings in double or single quotes with C escapes
// (adjacent ones joined), integers in decimal, hex and octal, floats,
// `true`/`false`, and enum values by name or number. Packed repeated fields
// are written packed. Errors name the line, the column and what was
// expected.

#ifndef PERFETTO_TESTD_TEXTPROTO_H_
#define PERFETTO_TESTD_TEXTPROTO_H_

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace testd {

enum class Kind {
  kUnknown,
  kDouble,
  kFloat,
  kInt64,
  kUint64,
  kInt32,
  kFixed64,
  kFixed32,
  kBool,
  kString,
  kGroup,
  kMessage,
  kBytes,
  kUint32,
  kEnum,
  kSfixed32,
  kSfixed64,
  kSint32,
  kSint64,
};

enum class Rep { kNotRepeated, kRepeatedNotPacked, kRepeatedPacked };

struct EnumValue {
  const char* name;
  int64_t value;
};

struct Enum {
  const char* name;
  const EnumValue* values;
  size_t size;
};

struct Field {
  const char* name;
  uint32_t number;
  Kind kind;
  Rep rep;
  int message;      // Index into kMessages, for kMessage.
  int enumeration;  // Index into kEnums, for kEnum.
};

struct Message {
  const char* name;
  const Field* fields;
  size_t size;
};

#include "schema.inc"

class TextProto {
 public:
  // Parses `text` as the root message (TraceConfig) into `out`. On failure
  // returns false with `error` set to "line L, column C: what".
  static bool Parse(const std::string& text, std::string* out,
                    std::string* error) {
    TextProto p(text);
    if (p.ParseMessage(0, '\0', out))
      return true;
    *error = p.error_;
    return false;
  }

 private:
  explicit TextProto(const std::string& text) : text_(text) {}

  // Wire format.
  static void Varint(std::string* out, uint64_t v) {
    while (v >= 0x80) {
      out->push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out->push_back(static_cast<char>(v));
  }
  static void Tag(std::string* out, uint32_t number, int wire_type) {
    Varint(out, (static_cast<uint64_t>(number) << 3) | wire_type);
  }
  static void Fixed(std::string* out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
      out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  static int WireType(Kind k) {
    switch (k) {
      case Kind::kDouble:
      case Kind::kFixed64:
      case Kind::kSfixed64:
        return 1;
      case Kind::kFloat:
      case Kind::kFixed32:
      case Kind::kSfixed32:
        return 5;
      case Kind::kString:
      case Kind::kBytes:
      case Kind::kMessage:
        return 2;
      default:
        return 0;
    }
  }

  // Lexing.
  void SkipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n')
          pos_++;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        pos_++;
      } else {
        break;
      }
    }
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  char Peek() {
    SkipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool Consume(char c) {
    if (Peek() != c)
      return false;
    pos_++;
    return true;
  }
  static bool IsWord(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
           c == '+';
  }
  // An identifier or a number, as it is written.
  std::string Word() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && IsWord(text_[pos_]))
      pos_++;
    return text_.substr(start, pos_ - start);
  }

  bool Fail(const std::string& what) {
    return Fail(pos_, what);
  }
  bool Fail(size_t at, const std::string& what) {
    if (!error_.empty())
      return false;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); i++) {
      if (text_[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    error_ = "line " + std::to_string(line) + ", column " +
             std::to_string(col) + ": " + what;
    return false;
  }
  std::string Found() {
    if (AtEnd())
      return "the end of the config";
    return "'" + std::string(1, text_[pos_]) + "'";
  }

  // One quoted string, escapes decoded.
  bool QuotedString(std::string* out) {
    char quote = Peek();
    size_t start = pos_++;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\n')
        return Fail(start, "string not closed on its line");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size())
        break;
      char e = text_[pos_++];
      switch (e) {
        case 'n': out->push_back('\n'); break;
        case 't': out->push_back('\t'); break;
        case 'r': out->push_back('\r'); break;
        case 'a': out->push_back('\a'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'v': out->push_back('\v'); break;
        case '\\': case '\'': case '"': case '?': out->push_back(e); break;
        case 'x': {
          int v = 0, n = 0;
          while (n < 2 && pos_ < text_.size() && isxdigit(text_[pos_])) {
            char h = text_[pos_++];
            v = v * 16 + (isdigit(h) ? h - '0' : (tolower(h) - 'a' + 10));
            n++;
          }
          if (n == 0)
            return Fail(pos_, "\\x without hex digits");
          out->push_back(static_cast<char>(v));
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0', n = 1;
            while (n < 3 && pos_ < text_.size() && text_[pos_] >= '0' &&
                   text_[pos_] <= '7') {
              v = v * 8 + (text_[pos_++] - '0');
              n++;
            }
            out->push_back(static_cast<char>(v));
          } else {
            return Fail(pos_ - 2, std::string("unknown escape \\") + e);
          }
      }
    }
    if (pos_ >= text_.size())
      return Fail(start, "string not closed");
    pos_++;  // The closing quote.
    return true;
  }

  const Field* Lookup(int msg, const std::string& name) {
    const Message& m = kMessages[msg];
    for (size_t i = 0; i < m.size; i++) {
      if (name == m.fields[i].name)
        return &m.fields[i];
    }
    return nullptr;
  }

  // One value of a scalar field, encoded (without its tag).
  bool Scalar(const Field& f, std::string* out) {
    size_t at = (SkipSpace(), pos_);
    if (f.kind == Kind::kString || f.kind == Kind::kBytes) {
      if (Peek() != '"' && Peek() != '\'')
        return Fail("expected a quoted string for " + std::string(f.name) +
                    ", found " + Found());
      std::string s;
      while (Peek() == '"' || Peek() == '\'') {
        if (!QuotedString(&s))
          return false;
      }
      Varint(out, s.size());
      out->append(s);
      return true;
    }
    std::string w = Word();
    if (w.empty())
      return Fail("expected a value for " + std::string(f.name) + ", found " +
                  Found());
    auto bad = [&](const char* what) {
      return Fail(at, "'" + w + "' is not " + what + " (field " +
                          std::string(f.name) + ")");
    };
    switch (f.kind) {
      case Kind::kBool:
        if (w == "true" || w == "True" || w == "t" || w == "1")
          Varint(out, 1);
        else if (w == "false" || w == "False" || w == "f" || w == "0")
          Varint(out, 0);
        else
          return bad("true or false");
        return true;
      case Kind::kEnum: {
        const Enum& e = kEnums[f.enumeration];
        for (size_t i = 0; i < e.size; i++) {
          if (w == e.values[i].name) {
            Varint(out, static_cast<uint64_t>(e.values[i].value));
            return true;
          }
        }
        int64_t v;
        if (!Signed(w, INT32_MIN, INT32_MAX, &v)) {
          std::string names;
          for (size_t i = 0; i < e.size; i++)
            names += (i ? ", " : "") + std::string(e.values[i].name);
          return Fail(at, "'" + w + "' is not a value of " + e.name +
                              " (field " + f.name + "; one of: " + names +
                              ")");
        }
        Varint(out, static_cast<uint64_t>(v));
        return true;
      }
      case Kind::kInt32:
      case Kind::kSint32:
      case Kind::kSfixed32: {
        int64_t v;
        if (!Signed(w, INT32_MIN, INT32_MAX, &v))
          return bad("a 32-bit integer");
        if (f.kind == Kind::kSint32)
          Varint(out, static_cast<uint32_t>((v << 1) ^ (v >> 31)));
        else if (f.kind == Kind::kSfixed32)
          Fixed(out, static_cast<uint32_t>(v), 4);
        else
          Varint(out, static_cast<uint64_t>(v));
        return true;
      }
      case Kind::kInt64:
      case Kind::kSint64:
      case Kind::kSfixed64: {
        int64_t v;
        if (!Signed(w, INT64_MIN, INT64_MAX, &v))
          return bad("a 64-bit integer");
        if (f.kind == Kind::kSint64)
          Varint(out, (static_cast<uint64_t>(v) << 1) ^
                          static_cast<uint64_t>(v >> 63));
        else if (f.kind == Kind::kSfixed64)
          Fixed(out, static_cast<uint64_t>(v), 8);
        else
          Varint(out, static_cast<uint64_t>(v));
        return true;
      }
      case Kind::kUint32:
      case Kind::kFixed32: {
        uint64_t v;
        if (!Unsigned(w, UINT32_MAX, &v))
          return bad("an unsigned 32-bit integer");
        if (f.kind == Kind::kFixed32)
          Fixed(out, v, 4);
        else
          Varint(out, v);
        return true;
      }
      case Kind::kUint64:
      case Kind::kFixed64: {
        uint64_t v;
        if (!Unsigned(w, UINT64_MAX, &v))
          return bad("an unsigned 64-bit integer");
        if (f.kind == Kind::kFixed64)
          Fixed(out, v, 8);
        else
          Varint(out, v);
        return true;
      }
      case Kind::kFloat:
      case Kind::kDouble: {
        double d;
        if (!Float(w, &d))
          return bad("a number");
        if (f.kind == Kind::kFloat) {
          float fl = static_cast<float>(d);
          uint32_t bits;
          memcpy(&bits, &fl, 4);
          Fixed(out, bits, 4);
        } else {
          uint64_t bits;
          memcpy(&bits, &d, 8);
          Fixed(out, bits, 8);
        }
        return true;
      }
      default:
        return Fail(at, std::string("field ") + f.name +
                            " has a type this parser does not write");
    }
  }

  static bool Signed(const std::string& w, int64_t lo, int64_t hi,
                     int64_t* v) {
    errno = 0;
    char* end = nullptr;
    long long x = strtoll(w.c_str(), &end, 0);
    if (errno || end == w.c_str() || *end || x < lo || x > hi)
      return false;
    *v = x;
    return true;
  }
  static bool Unsigned(const std::string& w, uint64_t hi, uint64_t* v) {
    if (w.empty() || w[0] == '-' || w[0] == '+')
      return false;
    errno = 0;
    char* end = nullptr;
    unsigned long long x = strtoull(w.c_str(), &end, 0);
    if (errno || end == w.c_str() || *end || x > hi)
      return false;
    *v = x;
    return true;
  }
  static bool Float(std::string w, double* v) {
    if (w == "inf" || w == "infinity")
      return *v = INFINITY, true;
    if (w == "-inf" || w == "-infinity")
      return *v = -INFINITY, true;
    if (w == "nan")
      return *v = NAN, true;
    if (!w.empty() && (w.back() == 'f' || w.back() == 'F'))
      w.pop_back();
    errno = 0;
    char* end = nullptr;
    *v = strtod(w.c_str(), &end);
    return !errno && end != w.c_str() && !*end;
  }

  // The fields of message `msg` up to `close` ('}', '>', or '\0' for the
  // end of the text), appended to `out`.
  bool ParseMessage(int msg, char close, std::string* out) {
    std::map<uint32_t, std::string> packed;
    for (;;) {
      if (close == '\0' ? AtEnd() : Consume(close))
        break;
      if (AtEnd())
        return Fail(std::string("expected '") + close + "' to close " +
                    kMessages[msg].name + ", found the end of the config");
      size_t at = pos_;
      std::string name = Word();
      if (name.empty())
        return Fail("expected a field name of " +
                    std::string(kMessages[msg].name) + ", found " + Found());
      const Field* f = Lookup(msg, name);
      if (!f)
        return Fail(at, "no field '" + name + "' in " + kMessages[msg].name);
      bool colon = Consume(':');
      if (f->kind == Kind::kMessage) {
        bool list = colon && Consume('[');
        do {
          if (list && Consume(']'))
            break;
          char open = Peek();
          if (open != '{' && open != '<')
            return Fail("expected '{' after " + name + ", found " + Found());
          pos_++;
          std::string sub;
          if (!ParseMessage(f->message, open == '{' ? '}' : '>', &sub))
            return false;
          Tag(out, f->number, 2);
          Varint(out, sub.size());
          out->append(sub);
        } while (list && (Consume(',') || Peek() != ']'));
        if (list && !Consume(']'))
          return Fail("expected ']' closing the list of " + name +
                      ", found " + Found());
      } else {
        if (!colon)
          return Fail("expected ':' after " + name + ", found " + Found());
        bool list = Consume('[');
        if (list && f->rep == Rep::kNotRepeated)
          return Fail(at, name + " is not repeated; it takes one value");
        do {
          if (list && Peek() == ']')
            break;
          if (f->rep == Rep::kRepeatedPacked) {
            if (!Scalar(*f, &packed[f->number]))
              return false;
          } else {
            Tag(out, f->number, WireType(f->kind));
            if (!Scalar(*f, out))
              return false;
          }
        } while (list && Consume(','));
        if (list && !Consume(']'))
          return Fail("expected ']' closing the list of " + name +
                      ", found " + Found());
      }
      if (!Consume(';'))
        Consume(',');
    }
    for (const auto& kv : packed) {
      Tag(out, kv.first, 2);
      Varint(out, kv.second.size());
      out->append(kv.second);
    }
    return true;
  }

  const std::string& text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace testd

#endif  // PERFETTO_TESTD_TEXTPROTO_H_
