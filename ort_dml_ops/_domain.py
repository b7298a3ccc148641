"""The project's custom-op domain: one name, one opset version, used everywhere."""

#: Reverse-DNS name of the domain holding the project's custom ops (CumProd, and the
#: fallback CumSum / ScatterElements). Opset version 1.
DOMAIN = "io.github.ortdmlops"
DOMAIN_VERSION = 1
