// The factories of the text family (text/*.cpp), for text/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::text {

std::unique_ptr<Kernel> make_tfidf_vectorizer(const Node& n, const KernelEnv& env);  // tfidf_vectorizer.cpp

}  // namespace memplan::rt::text
