// The text family, plain C++: TfIdfVectorizer, n-gram counts of integer token ids (the output of a
// tokenizer; string tensors are not supported).
#include "runtime/kernel_registry.h"
#include "runtime/kernels/text/factories.h"

namespace memplan::rt {

void register_text_kernels(KernelRegistry& r) { r.add("TfIdfVectorizer", text::make_tfidf_vectorizer); }

}  // namespace memplan::rt
