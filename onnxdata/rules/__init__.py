"""The rules of the format, each fault a Problem with a path: tensors, containers, the wire
rule, and ``rules.validation``, which applies them to protobuf messages (the reference)."""
