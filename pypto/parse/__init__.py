"""The libcst front end (NumPy-style source to graphs through pypto.builder). Not built yet."""
