"""``somatize.Store``: a store as the seeds name it, ``Store("/scratch/runs")``."""

import os


class Store:
    """A store folder (or snapshot ``.zip``) by its path: what ``somatize.record`` and
    ``somatize.health`` read and ``Recorder`` writes. Only a name for the folder — "a class
    around a store would only be the store with a longer name" — so every function takes the
    path itself as well."""

    def __init__(self, path):
        self.path = os.fspath(path)

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return f"Store({self.path!r})"

    def __eq__(self, other):
        return isinstance(other, Store) and other.path == self.path

    def __hash__(self):
        return hash(self.path)
