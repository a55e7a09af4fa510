"""Framework adapters, each an optional extra: ``diarist.adapters.langchain`` (``[langchain]``)."""
