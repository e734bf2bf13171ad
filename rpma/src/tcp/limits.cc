// Peer limits of the tcp provider; see limits.h.
#include "tcp/limits.h"

namespace rpma::prov::tcp {
namespace {
Limits g_limits;
}  // namespace

const Limits& GetLimits() { return g_limits; }
Limits* MutableLimitsForTest() { return &g_limits; }

}  // namespace rpma::prov::tcp
