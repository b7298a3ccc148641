"""The project's custom-op domain: one name, one opset version, used everywhere."""

#: Reverse-DNS name of the domain holding the project's custom ops (CumProd, and the
#: fallback CumSum / ScatterElements). Opset version 1.
DOMAIN = "io.github.ortdmlops"
DOMAIN_VERSION = 1

#: ONNX Runtime loads IR <= 13 (1.24.x DirectML and 1.31 alike); onnx 1.23 writes 14.
IR_VERSION = 10
