"""The room votes: `casting` (who may vote, on which steps, each refusal one line), `caps`
(how often one voter and one address may), `pairs` (which two frames a voter sees next, and on
which side), and `tab` (the class's voting view behind `?vote=<run>`, the teacher's QR code and
live count).
"""

__all__ = ["caps", "casting", "pairs", "tab"]
