// gloo/common/memory.h of gloo 0.0~git20220518.5b14351 (Debian 12's
// libgloo-dev), which the package does not install although
// gloo/transport/tcp/pair.h includes it. Only pair_abort.cc includes that
// header (to end what gloo leaves waiting, see pair_abort.h); the types
// below must keep gloo's layout (each wraps one std smart pointer), which
// pair_abort.cc checks against the library's size of tcp::Pair.
//
// Original: Copyright (c) 2017-present, Facebook, Inc. BSD-style license.
#pragma once

#include <memory>

namespace gloo {

template <typename T>
class NonOwningPtr;

template <typename T>
class WeakNonOwningPtr;

// Owns nothing: a shared_ptr with a no-op deleter, so that weak references
// to an object expire when the object (its owner) goes.
template <typename T>
class ShareableNonOwningPtr final {
 public:
  ShareableNonOwningPtr() = default;
  explicit ShareableNonOwningPtr(T* ptr) : ptr_(ptr, [](T*) {}) {}
  ShareableNonOwningPtr(const ShareableNonOwningPtr&) = delete;
  ShareableNonOwningPtr& operator=(const ShareableNonOwningPtr&) = delete;

 private:
  std::shared_ptr<T> ptr_;
  friend class WeakNonOwningPtr<T>;
};

template <typename T>
class WeakNonOwningPtr final {
 public:
  WeakNonOwningPtr() = default;
  explicit WeakNonOwningPtr(const ShareableNonOwningPtr<T>& ptr) : ptr_(ptr.ptr_) {}
  NonOwningPtr<T> lock() const { return NonOwningPtr<T>(*this); }
  bool operator==(const WeakNonOwningPtr<T>& other) const {
    return !ptr_.owner_before(other.ptr_) && !other.ptr_.owner_before(ptr_);
  }

 private:
  std::weak_ptr<T> ptr_;
  friend class NonOwningPtr<T>;
};

template <typename T>
class NonOwningPtr final {
 public:
  NonOwningPtr() = default;
  explicit NonOwningPtr(const WeakNonOwningPtr<T>& ptr) : ptr_(ptr.ptr_.lock()) {}
  T* get() const { return ptr_.get(); }
  T* operator->() const { return ptr_.get(); }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return static_cast<bool>(ptr_); }
  void reset() { ptr_.reset(); }

 private:
  std::shared_ptr<T> ptr_;
};

}  // namespace gloo
