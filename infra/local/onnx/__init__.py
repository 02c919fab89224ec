"""The local embedder's encoder: the BERT forward pass in NumPy (bert.py), the same encoder written as an
ONNX graph (graph.py, with the protobuf subset in proto.py) and the onnxruntime session that runs it
(session.py). `python -m infra.local.onnx.encoder_graph` prebuilds the graphs (layers/local-embedder/Makefile)."""
