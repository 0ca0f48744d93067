// Overloaded{lambdas...}: one visitor for std::visit out of several lambdas.
#pragma once

namespace hvd::common {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace hvd::common
