"""What a model declares: the types of its inputs and outputs (``types``), read from a
``model.onnx`` without parsing the model (``file``)."""
