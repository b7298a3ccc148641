"""placement: ONNX Runtime's graph preparation and partitioning, as they decide where nodes run.

One module per step of session creation, each naming the ORT source it mirrors; ``pipeline.py``
runs them in ORT's order and ``ort_dml_ops.inspection`` reports the result:

* ``load.py`` (graph.cc: Constant nodes become initializers), ``graph.py`` (the graph and ORT's
  topological order),
* level-1 optimizers: ``rules.py`` (Identity/Dropout/Cast/Expand/no-op elimination), ``cse.py``
  (constant sharing, common-subexpression elimination), ``folding.py`` (constant folding),
  ``reshape_fusion.py``, ``transpose_optimizer.py``,
* partitioning: ``fallback_cpu.py`` (``GetCpuPreferredNodes``) with the per-node kernel rules of
  ``ort_dml_ops.targets``, then ``memcpy.py`` (the copies ORT inserts).

Ground truth: ``truth.py`` records ORT's own assignment and copies on the DML lane
(``tools/record_placement.py``); ``compare.py`` holds a prediction against it.
"""
