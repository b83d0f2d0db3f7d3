#include "ir/parser.h"

#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/format.h"
#include "ir/printer.h"
#include "ir/status_macros.h"

namespace retc::ir {
namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

enum class Tok { kEnd, kId, kInt, kFloat, kStr, kNode, kParam, kPunct };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;   // identifier, number text, decoded string, punctuation
  int64_t index = 0;  // for %N and @N
  size_t col = 0;
};

// Tokenizes one line.
class Lexer {
 public:
  Lexer(absl::string_view line) : s_(line) {}

  absl::StatusOr<Token> next() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
    Token t;
    t.col = pos_ + 1;
    if (pos_ >= s_.size()) return t;
    char c = s_[pos_];
    auto is_id = [](char ch, bool first) {
      return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
             (!first && ((ch >= '0' && ch <= '9') || ch == '-' || ch == '.'));
    };
    if (is_id(c, true)) {
      size_t b = pos_;
      while (pos_ < s_.size() && is_id(s_[pos_], false)) ++pos_;
      t.kind = Tok::kId;
      t.text = std::string(s_.substr(b, pos_ - b));
      return t;
    }
    if (c == '%' || c == '@') {
      size_t b = ++pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (b == pos_ || !absl::SimpleAtoi(s_.substr(b, pos_ - b), &t.index)) {
        return error(t.col, absl::StrCat("expected a number after '", std::string(1, c), "'"));
      }
      t.kind = c == '%' ? Tok::kNode : Tok::kParam;
      return t;
    }
    if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
      size_t b = pos_++;
      bool is_float = false;
      if (pos_ < s_.size() && is_id(s_[pos_], true)) {  // -inf
        while (pos_ < s_.size() && is_id(s_[pos_], false)) ++pos_;
        t.kind = Tok::kFloat;
        t.text = std::string(s_.substr(b, pos_ - b));
        return t;
      }
      while (pos_ < s_.size()) {
        char d = s_[pos_];
        if (d >= '0' && d <= '9') {
          ++pos_;
        } else if (d == '.' || d == 'e' || d == 'E') {
          is_float = true;
          ++pos_;
          if ((d == 'e' || d == 'E') && pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+'))
            ++pos_;
        } else {
          break;
        }
      }
      t.kind = is_float ? Tok::kFloat : Tok::kInt;
      t.text = std::string(s_.substr(b, pos_ - b));
      return t;
    }
    if (c == '"') {
      size_t b = pos_++;
      while (pos_ < s_.size() && s_[pos_] != '"') pos_ += s_[pos_] == '\\' ? 2 : 1;
      if (pos_ >= s_.size()) return error(t.col, "unterminated string");
      ++pos_;
      auto v = unquote(s_.substr(b, pos_ - b));
      if (!v.ok()) return error(t.col, v.status().message());
      t.kind = Tok::kStr;
      t.text = *std::move(v);
      return t;
    }
    if (std::string_view("=:,[](){}").find(c) != std::string_view::npos) {
      ++pos_;
      t.kind = Tok::kPunct;
      t.text = std::string(1, c);
      return t;
    }
    return error(t.col, absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }

  static absl::Status error(size_t col, absl::string_view msg) {
    return absl::InvalidArgumentError(absl::StrCat(col, ": error: ", msg));
  }

 private:
  absl::string_view s_;
  size_t pos_ = 0;
};

class Parser {
 public:
  Parser(absl::string_view file) : file_(file) {}

  absl::StatusOr<Graph> run(absl::string_view text) {
    int line_no = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      ++line_no;
      line_ = line_no;
      toks_.clear();
      pos_ = 0;
      size_t first = line.find_first_not_of(" \t\r");
      if (first == absl::string_view::npos || line[first] == '#') continue;
      Lexer lex(line);
      while (true) {
        auto t = lex.next();
        if (!t.ok())
          return absl::InvalidArgumentError(
              absl::StrCat(file_, ":", line_no, ":", t.status().message()));
        if (t->kind == Tok::kEnd) {
          end_col_ = t->col;
          break;
        }
        toks_.push_back(*std::move(t));
      }
      absl::Status s = statement();
      if (!s.ok()) return s;
    }
    for (const Param& p : g_.params()) {
      for (int32_t ref : {p.options.init_node, p.options.initial.node}) {
        if (ref >= static_cast<int32_t>(g_.size())) {
          return absl::InvalidArgumentError(absl::StrCat(file_, ": error: param '", p.path,
                                                         "' refers to node %", ref,
                                                         ", which is not defined"));
        }
      }
    }
    return std::move(g_);
  }

 private:
  // --- token helpers ---------------------------------------------------------
  const Token& peek() const {
    static const Token kEnd;
    return pos_ < toks_.size() ? toks_[pos_] : kEnd;
  }
  size_t col() const { return pos_ < toks_.size() ? toks_[pos_].col : end_col_; }
  absl::Status error(absl::string_view msg) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ":", line_, ":", col(), ": error: ", msg));
  }
  bool at_punct(char c) const { return peek().kind == Tok::kPunct && peek().text[0] == c; }
  bool at_id(absl::string_view s) const { return peek().kind == Tok::kId && peek().text == s; }
  absl::Status expect_punct(char c) {
    if (!at_punct(c)) return error(absl::StrCat("expected '", std::string(1, c), "'"));
    ++pos_;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> take(Tok kind, absl::string_view what) {
    if (peek().kind != kind) return error(absl::StrCat("expected ", what));
    return toks_[pos_++].text;
  }
  absl::StatusOr<int64_t> take_index(Tok kind, absl::string_view what) {
    if (peek().kind != kind) return error(absl::StrCat("expected ", what));
    return toks_[pos_++].index;
  }
  absl::StatusOr<int64_t> take_int() {
    ASSIGN_OR_RETURN(auto s, take(Tok::kInt, "an integer"));
    int64_t v;
    if (!absl::SimpleAtoi(s, &v)) return error("integer out of range");
    return v;
  }
  absl::StatusOr<double> take_number() {
    const Token& t = peek();
    if (t.kind == Tok::kId && (t.text == "inf" || t.text == "nan")) {
      ++pos_;
      return t.text == "inf" ? INFINITY : NAN;
    }
    if (t.kind != Tok::kInt && t.kind != Tok::kFloat) return error("expected a number");
    std::string text = toks_[pos_++].text;
    if (text == "-inf") return -INFINITY;
    double v;
    if (!absl::SimpleAtod(text, &v)) return error(absl::StrCat("invalid number '", text, "'"));
    return v;
  }
  absl::StatusOr<std::string> take_key(absl::string_view key) {
    if (!at_id(key)) return error(absl::StrCat("expected '", key, "='"));
    ++pos_;
    RETURN_IF_ERROR(expect_punct('='));
    return std::string(key);
  }
  absl::Status expect_end() {
    if (pos_ < toks_.size()) return error(absl::StrCat("unexpected '", peek().text, "'"));
    return absl::OkStatus();
  }

  absl::StatusOr<Dim> dim_ref() {
    ASSIGN_OR_RETURN(auto id, take(Tok::kId, "a dim"));
    if (id == "batch_dim") return Dim::batch();
    auto it = dims_.find(id);
    if (it == dims_.end()) {
      --pos_;
      return error(absl::StrCat("unknown dim '", id, "'; declare it with a 'dim' line first"));
    }
    return it->second;
  }
  absl::StatusOr<std::vector<Dim>> dim_list() {
    RETURN_IF_ERROR(expect_punct('['));
    std::vector<Dim> dims;
    while (!at_punct(']')) {
      ASSIGN_OR_RETURN(auto d, dim_ref());
      dims.push_back(d);
      if (!at_punct(']') && !expect_punct(',').ok()) return error("expected ',' or ']'");
    }
    ++pos_;
    return dims;
  }
  absl::StatusOr<DType> dtype() {
    ASSIGN_OR_RETURN(auto dt, take(Tok::kId, "a dtype"));
    auto t = parse_dtype(dt);
    if (!t) return error(absl::StrCat("unknown dtype '", dt, "'"));
    return *t;
  }
  absl::StatusOr<TensorType> type() {
    ASSIGN_OR_RETURN(auto dims, dim_list());
    ASSIGN_OR_RETURN(auto dt, dtype());
    TensorType t{std::move(dims), dt, std::nullopt};
    if (at_id("sparse")) {
      ++pos_;
      ASSIGN_OR_RETURN(auto d, dim_ref());
      t.sparse_dim = d;
    }
    return t;
  }

  // --- statements ----------------------------------------------------------
  absl::Status statement() {
    if (at_id("dim")) return dim_statement();
    if (at_id("param")) return param_statement();
    if (at_id("output") || at_id("loss") || at_id("search")) return mark_statement();
    if (at_id("checkpoint")) return checkpoint_statement();
    if (peek().kind == Tok::kNode) return node_statement();
    return error("expected 'dim', 'param', a node '%N = ...', 'output', 'loss' or 'checkpoint'");
  }

  absl::Status dim_statement() {
    ++pos_;
    ASSIGN_OR_RETURN(auto id, take(Tok::kId, "a dim name"));
    if (dims_.contains(id) || id == "batch_dim") {
      --pos_;
      return error(absl::StrCat("dim '", id, "' is declared twice"));
    }
    RETURN_IF_ERROR(expect_punct('='));
    ASSIGN_OR_RETURN(auto kind, take(Tok::kId, "feature, spatial, add, mul or floordiv"));
    std::optional<Dim> d;
    if (kind == "feature" || kind == "spatial") {
      ASSIGN_OR_RETURN(auto name, take(Tok::kStr, "the dim's name string"));
      std::optional<int64_t> size;
      if (peek().kind == Tok::kInt) {
        ASSIGN_OR_RETURN(auto n, take_int());
        if (n <= 0) return error("a dim size must be positive");
        size = n;
      }
      if (kind == "feature") {
        if (!size) return error("a feature dim needs a size");
        d = Dim::feature(name, *size);
      } else {
        d = Dim::spatial(name, size);
      }
    } else if (kind == "add") {
      ASSIGN_OR_RETURN(auto a, dim_ref());
      ASSIGN_OR_RETURN(auto b, dim_ref());
      d = a + b;
    } else if (kind == "mul" || kind == "floordiv") {
      ASSIGN_OR_RETURN(auto a, dim_ref());
      ASSIGN_OR_RETURN(auto k, take_int());
      if (k <= 0) return error("the factor must be positive");
      d = kind == "mul" ? k * a : a.floordiv(k);
    } else {
      return error(absl::StrCat("unknown dim kind '", kind, "'"));
    }
    RETURN_IF_ERROR(expect_end());
    dims_.emplace(id, *d);
    return absl::OkStatus();
  }

  absl::StatusOr<Initializer> initializer() {
    ASSIGN_OR_RETURN(auto kind, take(Tok::kId, "an initializer"));
    RETURN_IF_ERROR(expect_punct('('));
    Initializer init;
    auto num = [&](absl::string_view key) -> absl::StatusOr<double> {
      RETURN_IF_ERROR(take_key(key).status());
      return take_number();
    };
    if (kind == "constant") {
      ASSIGN_OR_RETURN(auto v, take_number());
      init = Initializer::constant(v);
    } else if (kind == "variance_scaling") {
      ASSIGN_OR_RETURN(auto scale, num("scale"));
      RETURN_IF_ERROR(expect_punct(','));
      RETURN_IF_ERROR(take_key("mode").status());
      ASSIGN_OR_RETURN(auto mode, take(Tok::kId, "fan_in, fan_out or fan_avg"));
      RETURN_IF_ERROR(expect_punct(','));
      RETURN_IF_ERROR(take_key("distribution").status());
      ASSIGN_OR_RETURN(auto dist, take(Tok::kId, "uniform, normal or truncated_normal"));
      FanMode m;
      if (mode == "fan_in") {
        m = FanMode::kFanIn;
      } else if (mode == "fan_out") {
        m = FanMode::kFanOut;
      } else if (mode == "fan_avg") {
        m = FanMode::kFanAvg;
      } else {
        return error(absl::StrCat("unknown fan mode '", mode, "'"));
      }
      std::optional<Distribution> d;
      for (Distribution x :
           {Distribution::kUniform, Distribution::kNormal, Distribution::kTruncatedNormal}) {
        if (distribution_name(x) == dist) d = x;
      }
      if (!d) return error(absl::StrCat("unknown distribution '", dist, "'"));
      init = Initializer::variance_scaling(scale, m, *d);
    } else if (kind == "normal" || kind == "uniform") {
      bool normal = kind == "normal";
      ASSIGN_OR_RETURN(auto a, num(normal ? "mean" : "minval"));
      RETURN_IF_ERROR(expect_punct(','));
      ASSIGN_OR_RETURN(auto b, num(normal ? "stddev" : "maxval"));
      init = normal ? Initializer::normal(a, b) : Initializer::uniform(a, b);
    } else if (kind == "subgraph") {
      ASSIGN_OR_RETURN(auto n, take_index(Tok::kNode, "a node %N"));
      init.kind = Initializer::Kind::kSubgraph;
      init.node = static_cast<int32_t>(n);
    } else {
      return error(absl::StrCat("unknown initializer '", kind, "'"));
    }
    RETURN_IF_ERROR(expect_punct(')'));
    return init;
  }

  absl::Status param_statement() {
    ++pos_;
    ASSIGN_OR_RETURN(auto index, take_index(Tok::kParam, "@N"));
    if (index != static_cast<int64_t>(g_.params().size())) {
      return error(absl::StrCat("expected param @", g_.params().size(), ", got @", index));
    }
    ASSIGN_OR_RETURN(auto path, take(Tok::kStr, "the param's path string"));
    RETURN_IF_ERROR(expect_punct(':'));
    ASSIGN_OR_RETURN(auto dims, dim_list());
    ASSIGN_OR_RETURN(auto dt, dtype());
    Param p;
    p.path = path;
    p.dims = dims;
    p.dtype = dt;
    RETURN_IF_ERROR(take_key("kind").status());
    ASSIGN_OR_RETURN(auto kind, take(Tok::kId, "a param kind"));
    bool found = false;
    for (ParamKind k : {ParamKind::kWeight, ParamKind::kBias, ParamKind::kEmbedding,
                        ParamKind::kNormScale, ParamKind::kNormShift, ParamKind::kAuxiliary}) {
      if (param_kind_name(k) == kind) {
        p.kind = k;
        found = true;
      }
    }
    if (!found) return error(absl::StrCat("unknown param kind '", kind, "'"));
    RETURN_IF_ERROR(take_key("init").status());
    ASSIGN_OR_RETURN(auto init, initializer());
    p.options.initial = init;
    ParamOptions& o = p.options;
    bool has_loc = false;
    while (pos_ < toks_.size()) {
      ASSIGN_OR_RETURN(auto key, take(Tok::kId, "an option"));
      RETURN_IF_ERROR(expect_punct('='));
      absl::Status s;
      auto number = [&](double& out) {
        ASSIGN_OR_RETURN(auto v, take_number());
        out = v;
        return absl::OkStatus();
      };
      if (key == "init_node") {
        ASSIGN_OR_RETURN(auto n, take_index(Tok::kNode, "a node %N"));
        o.init_node = static_cast<int32_t>(n);
      } else if (key == "trainable") {
        ASSIGN_OR_RETURN(auto v, take(Tok::kId, "true or false"));
        if (v != "true" && v != "false") return error("expected true or false");
        o.trainable = v == "true";
      } else if (key == "weight_decay") {
        s = number(o.weight_decay.value);
        if (s.ok() && at_id("coupled")) {
          ++pos_;
          o.weight_decay.coupled = true;
        }
      } else if (key == "lr_multiplier") {
        s = number(o.lr_multiplier);
      } else if (key == "gradient_clip") {
        s = number(o.gradient_clip);
      } else if (key == "device") {
        ASSIGN_OR_RETURN(auto v, take(Tok::kStr, "a device string"));
        o.device = v;
      } else if (key == "loc") {
        ASSIGN_OR_RETURN(auto v, take(Tok::kStr, "a location string"));
        p.loc = parse_loc(v);
        has_loc = true;
      } else {
        pos_ -= 2;
        return error(absl::StrCat("unknown param option '", key, "'"));
      }
      if (!s.ok()) return s;
    }
    if (!has_loc) p.loc = SourceLoc{file_, static_cast<uint32_t>(line_), 1};
    g_.add_param(std::move(p));
    return absl::OkStatus();
  }

  static SourceLoc parse_loc(const std::string& s) {
    // file:line:col, the file may itself hold ':'.
    SourceLoc loc;
    size_t c2 = s.rfind(':');
    size_t c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : s.rfind(':', c2 - 1);
    uint32_t line = 0, col = 0;
    if (c1 != std::string::npos && absl::SimpleAtoi(s.substr(c1 + 1, c2 - c1 - 1), &line) &&
        absl::SimpleAtoi(s.substr(c2 + 1), &col)) {
      loc = SourceLoc{s.substr(0, c1), line, col};
    }
    return loc;
  }

  absl::StatusOr<AttrValue> attr_value() {
    const Token& t = peek();
    if (t.kind == Tok::kInt) {
      ASSIGN_OR_RETURN(auto v, take_int());
      return AttrValue(v);
    }
    if (t.kind == Tok::kFloat || (t.kind == Tok::kId && (t.text == "inf" || t.text == "nan"))) {
      ASSIGN_OR_RETURN(auto v, take_number());
      return AttrValue(v);
    }
    if (t.kind == Tok::kStr) return AttrValue(toks_[pos_++].text);
    if (t.kind == Tok::kId && (t.text == "true" || t.text == "false")) {
      ++pos_;
      return AttrValue(t.text == "true");
    }
    if (at_punct('(')) {
      ++pos_;
      std::vector<int64_t> ints;
      while (!at_punct(')')) {
        ASSIGN_OR_RETURN(auto v, take_int());
        ints.push_back(v);
        if (!at_punct(')') && !expect_punct(',').ok()) return error("expected ',' or ')'");
      }
      ++pos_;
      return AttrValue(std::move(ints));
    }
    if (at_punct('[')) {
      ASSIGN_OR_RETURN(auto dims, dim_list());
      return AttrValue(std::move(dims));
    }
    ASSIGN_OR_RETURN(auto d, dim_ref());
    return AttrValue(d);
  }

  absl::Status node_statement() {
    size_t start = pos_;
    int64_t index = toks_[pos_++].index;
    if (index != static_cast<int64_t>(g_.size())) {
      pos_ = start;
      return error(
          absl::StrCat("expected node %", g_.size(), ", got %", index,
                       " (nodes are numbered in order; inputs must be defined before use)"));
    }
    RETURN_IF_ERROR(expect_punct('='));
    size_t kind_col = col();
    ASSIGN_OR_RETURN(auto kind_name, take(Tok::kId, "a node kind"));
    auto kind = parse_node_kind(kind_name);
    if (!kind) {
      --pos_;
      return error(absl::StrCat("unknown node kind '", kind_name, "'"));
    }
    NodeSpec spec;
    if (*kind == NodeKind::kParam) {
      ASSIGN_OR_RETURN(auto p, take_index(Tok::kParam, "@N"));
      if (p < 0 || p >= static_cast<int64_t>(g_.params().size())) {
        --pos_;
        return error(absl::StrCat("param @", p, " is not defined"));
      }
      spec.param = ParamId{static_cast<int32_t>(p)};
    }
    std::vector<NodeId> inputs;
    while (peek().kind == Tok::kNode) {
      int64_t in = toks_[pos_].index;
      if (in < 0 || in >= index) {
        return error(absl::StrCat("input %", in, " is not defined before %", index,
                                  in >= index ? " (a cycle or a forward reference)" : ""));
      }
      ++pos_;
      inputs.push_back(NodeId{static_cast<int32_t>(in)});
      if (at_punct(',')) ++pos_;
    }
    if (at_punct('{')) {
      ++pos_;
      while (!at_punct('}')) {
        ASSIGN_OR_RETURN(auto key_name, take(Tok::kId, "an attribute name"));
        const std::optional<AttrKey> key = parse_attr_key(key_name);
        if (!key) {
          --pos_;
          return error(absl::StrCat("unknown attribute '", key_name, "'"));
        }
        RETURN_IF_ERROR(expect_punct('='));
        ASSIGN_OR_RETURN(auto v, attr_value());
        // An integer literal where the declaration says a number (value=1).
        if (const int64_t* i = std::get_if<int64_t>(&v);
            i && attr_type_index(*key) == AttrValue(0.0).index()) {
          v = static_cast<double>(*i);
        }
        if (spec.attrs.find(*key))
          return error(absl::StrCat("attribute '", key_name, "' is given twice"));
        spec.attrs.set(*key, std::move(v));
        if (!at_punct('}') && !expect_punct(',').ok()) return error("expected ',' or '}'");
      }
      ++pos_;
    }
    RETURN_IF_ERROR(expect_punct(':'));
    ASSIGN_OR_RETURN(auto ty, type());
    RETURN_IF_ERROR(take_key("stage").status());
    ASSIGN_OR_RETURN(auto stage, take(Tok::kId, "param-init or step"));
    if (stage == "param-init") {
      spec.stage = Stage::kParamInit;
    } else if (stage != "step") {
      return error(absl::StrCat("unknown stage '", stage, "'"));
    }
    std::string name;
    bool has_loc = false;  // `loc="<unknown>"` stays unknown
    while (pos_ < toks_.size()) {
      ASSIGN_OR_RETURN(auto key, take(Tok::kId, "module=, name= or loc="));
      RETURN_IF_ERROR(expect_punct('='));
      ASSIGN_OR_RETURN(auto v, take(Tok::kStr, "a string"));
      if (key == "module") {
        spec.module_path = v;
      } else if (key == "name") {
        name = v;
      } else if (key == "loc") {
        spec.loc = parse_loc(v);
        has_loc = true;
      } else {
        return error(absl::StrCat("unknown node field '", key, "'"));
      }
    }
    if (!has_loc) spec.loc = SourceLoc{file_, static_cast<uint32_t>(line_), 1};
    if (*kind == NodeKind::kData) spec.type = ty;
    auto id = g_.add(*kind, std::move(inputs), std::move(spec));
    if (!id.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file_, ":", line_, ":", kind_col, ": error: ", id.status().message()));
    }
    if (!(g_.node(*id).type == ty)) {
      return absl::InvalidArgumentError(absl::StrCat(
          file_, ":", line_, ":", kind_col, ": error: ", "the printed type ", ty.describe(),
          " differs from the inferred type ", g_.node(*id).type.describe()));
    }
    if (!name.empty()) g_.set_name(*id, name);
    return absl::OkStatus();
  }

  absl::Status mark_statement() {
    Mark::Kind kind = *parse_mark_kind(peek().text);
    ++pos_;
    ASSIGN_OR_RETURN(auto name, take(Tok::kStr, "the mark's name"));
    RETURN_IF_ERROR(expect_punct('='));
    ASSIGN_OR_RETURN(auto n, take_index(Tok::kNode, "a node %N"));
    if (n < 0 || n >= static_cast<int64_t>(g_.size())) {
      --pos_;
      return error(absl::StrCat("node %", n, " is not defined"));
    }
    RETURN_IF_ERROR(expect_end());
    g_.add_mark(Mark{kind, NodeId{static_cast<int32_t>(n)}, name, {}});
    return absl::OkStatus();
  }

  absl::Status checkpoint_statement() {
    ++pos_;
    ASSIGN_OR_RETURN(auto path, take(Tok::kStr, "the checkpointed module's path"));
    RETURN_IF_ERROR(expect_end());
    g_.add_checkpoint(Checkpoint{path, {}});
    return absl::OkStatus();
  }

  std::string file_;
  Graph g_;
  std::map<std::string, Dim> dims_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  size_t end_col_ = 1;
  int line_ = 0;
};

}  // namespace

absl::StatusOr<std::string> unquote(absl::string_view lit) {
  if (lit.size() < 2 || lit.front() != '"' || lit.back() != '"') {
    return absl::InvalidArgumentError("expected a double-quoted string");
  }
  std::string out;
  for (size_t i = 1; i + 1 < lit.size(); ++i) {
    char c = lit[i];
    if (c != '\\') {
      if (c == '"') return absl::InvalidArgumentError("unescaped '\"' inside a string");
      out += c;
      continue;
    }
    if (i + 2 >= lit.size()) return absl::InvalidArgumentError("a string ends in a backslash");
    char e = lit[++i];
    int hex = 0;
    switch (e) {
      case '"':
      case '\\':
      case '\'':
        out += e;
        continue;
      case 'n':
        out += '\n';
        continue;
      case 'r':
        out += '\r';
        continue;
      case 't':
        out += '\t';
        continue;
      case 'x':
        hex = 2;
        break;
      case 'u':
        hex = 4;
        break;
      case 'U':
        hex = 8;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("unknown escape '\\", std::string(1, e), "'"));
    }
    if (i + hex > lit.size() - 2) {
      return absl::InvalidArgumentError("a string escape is cut short");
    }
    uint32_t cp = 0;
    for (int k = 1; k <= hex; ++k) {
      char h = lit[i + k];
      int v = (h >= '0' && h <= '9')   ? h - '0'
              : (h >= 'a' && h <= 'f') ? h - 'a' + 10
              : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                       : -1;
      if (v < 0) return absl::InvalidArgumentError("invalid hex digit in a string escape");
      cp = cp * 16 + static_cast<uint32_t>(v);
    }
    i += hex;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return absl::InvalidArgumentError("a string escape is not a Unicode scalar value");
    }
    append_utf8(out, cp);
  }
  return out;
}

absl::StatusOr<Graph> parse(absl::string_view text, absl::string_view file) {
  return Parser(file).run(text);
}

bool equivalent(const Graph& a, const Graph& b) { return print(a) == print(b); }

}  // namespace retc::ir
