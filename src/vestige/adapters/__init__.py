"""Framework adapters, each an optional extra: ``vestige.adapters.langchain`` (``[langchain]``)."""
