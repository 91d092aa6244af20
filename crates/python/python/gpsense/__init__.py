"""gpsense: exact (GpSense) and approximate (TruST) subgraph matching on common-sense knowledge
graphs such as ConceptNet and WordNet, on the CPU or an NVIDIA GPU.

>>> import gpsense
>>> g = gpsense.Graph.default()           # the embedded ConceptNet-100K
>>> sorted(g.query("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }"))
[('kitten',), ('lizard',)]
>>> g.count("SELECT * WHERE { ?x IsA animal }")
112
"""

from ._errors import GpsenseError, GraphError, MatchError, QueryError, QueryTimeout
from ._gpsense import Graph, QueryResult, TrustMatch, __version__

__all__ = [
    "Graph",
    "QueryResult",
    "TrustMatch",
    "GpsenseError",
    "GraphError",
    "MatchError",
    "QueryError",
    "QueryTimeout",
    "__version__",
]
