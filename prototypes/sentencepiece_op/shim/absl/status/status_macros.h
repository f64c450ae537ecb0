// Minimal shim: sentencepiece 0.2.3 targets abseil 20260817 which ships
// absl/status/status_macros.h; TF 2.21 bundles abseil 20250814 which lacks it.
// Only the plain (non-streaming) ABSL_RETURN_IF_ERROR form is used by the
// encode-only sources.
#ifndef TF_INPUT_SHIM_ABSL_STATUS_MACROS_H_
#define TF_INPUT_SHIM_ABSL_STATUS_MACROS_H_
#include "absl/status/status.h"
#define ABSL_RETURN_IF_ERROR(expr)                          \
  do {                                                      \
    ::absl::Status _spm_shim_st = (expr);                   \
    if (ABSL_PREDICT_FALSE(!_spm_shim_st.ok())) return _spm_shim_st; \
  } while (0)
#endif
