"""The WebGPU lane's Python side, outside the installed package (docs/webgpu.md).

Import it with tools/ on sys.path (tests/webgpu/conftest.py, tools/gen_kernel_tables.py):

    single_op.py   one single-node model with its inputs (OpCase, Input)
    variants.py    the node variants recorded per op
    cases.py       which ops, opsets and element types are recorded (what and why)
    record.py      running them on the plugin: ORT's assignment record, CPU-memory inputs
"""
