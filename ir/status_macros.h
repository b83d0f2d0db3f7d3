// Status propagation macros in the style of ABSL's / XLA's:
//
//   RETURN_IF_ERROR(check(x));               // returns the error, if any
//   ASSIGN_OR_RETURN(Dim axis, attr<Dim>(spec, kind, "axis"));
//
// ASSIGN_OR_RETURN declares (or assigns) `lhs` from a StatusOr's value, or
// returns its error from the enclosing function (which returns a Status or
// any StatusOr).
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RETC_STATUS_CONCAT_INNER(a, b) a##b
#define RETC_STATUS_CONCAT(a, b) RETC_STATUS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                                                          \
  do {                                                                                 \
    if (::absl::Status retc_status_ = (expr); !retc_status_.ok()) return retc_status_; \
  } while (0)

#define RETC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = *std::move(tmp)

#define ASSIGN_OR_RETURN(lhs, expr) \
  RETC_ASSIGN_OR_RETURN_IMPL(RETC_STATUS_CONCAT(retc_statusor_, __LINE__), lhs, expr)
