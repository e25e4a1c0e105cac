// Status: the error value of the library. Library code never exits and never lets an
// exception escape a thread; it returns a Status (or a Result<T>) that names what failed
// and, where there is one, the file. Only tools/ turn a Status into a message and an
// exit code.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace oans {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // bad option or input the user gave
    kIoError,          // a system call failed (errnum says which)
    kCorrupt,          // a file is damaged, truncated or not ours
    kVersion,          // a file from a newer oans
    kMismatch,         // a file is not what the plan or index says it is
    kInterrupted,      // stopped by a signal or a deadline
    kBusy,             // another process holds what this one needs (a run's lock)
    kUnsupported,      // this system (or this Sys) cannot do that here
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status Invalid(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status Corrupt(std::string msg) { return Status(Code::kCorrupt, std::move(msg)); }
  static Status Version(std::string msg) { return Status(Code::kVersion, std::move(msg)); }
  static Status Mismatch(std::string msg) { return Status(Code::kMismatch, std::move(msg)); }
  static Status Interrupted(std::string msg) { return Status(Code::kInterrupted, std::move(msg)); }
  static Status Busy(std::string msg) { return Status(Code::kBusy, std::move(msg)); }
  // What a Sys cannot do here: "what is not supported here".
  static Status Unsupported(const std::string& what) { return Status(Code::kUnsupported, what + " is not supported here"); }
  // An I/O error: "what: strerror(errnum)".
  static Status Io(std::string what, int errnum);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsUnsupported() const { return code_ == Code::kUnsupported; }
  int errnum() const { return errnum_; }
  const std::string& message() const { return msg_; }
  // A copy with the message prefixed by context ("--previous: ...").
  Status Prepend(const std::string& context) const;

 private:
  Status(Code c, std::string msg, int errnum = 0) : code_(c), errnum_(errnum), msg_(std::move(msg)) {}
  Code code_ = Code::kOk;
  int errnum_ = 0;
  std::string msg_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(std::move(s)) {}     // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

#define OANS_RETURN_IF_ERROR(expr)        \
  do {                                    \
    ::oans::Status _st = (expr);          \
    if (!_st.ok()) return _st;            \
  } while (0)

// OANS_ASSIGN_OR_RETURN(auto x, Expr()): evaluates a Result<T>; on error returns its
// Status from the enclosing function, else moves the value into the declaration (or an
// existing variable) on the left.
#define OANS_ASSIGN_OR_RETURN(lhs, expr) OANS_ASSIGN_OR_RETURN_IMPL_(OANS_STATUS_CONCAT_(_oans_result_, __LINE__), lhs, expr)
#define OANS_STATUS_CONCAT_(a, b) OANS_STATUS_CONCAT2_(a, b)
#define OANS_STATUS_CONCAT2_(a, b) a##b
#define OANS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(*tmp)

}  // namespace oans
