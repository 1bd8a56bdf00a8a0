"""The one error type bert_core raises for bad input or an unusable model source."""


class BertCoreError(ValueError):
    """The one error bert_core raises for bad input, with a message a page can show."""
