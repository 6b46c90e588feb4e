"""Two stand-in models, deterministic, so the comparison is the same on every run.

``helpdesk-large`` knows the shop's policies, exceptions included; ``helpdesk-mini``, at a
tenth of the price, knows the everyday answers and gets every exception wrong. Both read
the prompt they are sent: they find the customer's question in it, and they quote exact
figures only when the prompt asks for them (version 2 of prompts/support.yaml does), so
the prompt version changes what they say, as a real model's would.
"""

from __future__ import annotations

from pytest_elizon_eval import Answer, Usage

#: Question -> the right answer, and what is said instead: ``vague`` by any model not asked
#: for exact figures, ``mini`` by the small model (it does not know the exception).
KNOWLEDGE: dict[str, dict[str, str]] = {
    # -- everyday questions: both models know them -------------------------------------
    "How many days do I have to return an item?": {
        "right": "You have 30 days to return an item.",
        "vague": "You have about a month to return an item."},
    "How long does a refund take?": {
        "right": "Refunds reach your account within 5 business days.",
        "vague": "Refunds usually reach your account within a week."},
    "How much does standard shipping cost?": {"right": "Standard shipping costs 4.95 EUR."},
    "When is shipping free?": {"right": "Shipping is free on orders over 50 EUR."},
    "How long is the warranty?": {"right": "Every product has a two-year warranty."},
    "When can I call the helpdesk?": {
        "right": "The phone line is open 9:00 to 17:00, Monday to Friday."},
    "Which payment methods do you accept?": {
        "right": "We accept cards, PayPal and bank transfer."},
    "How do I track my order?": {"right": "Use the tracking link in your shipping email."},
    "Can I change my delivery address?": {
        "right": "Yes, until the order ships: edit it under My orders."},
    "How do I cancel an order?": {"right": "Cancel it under My orders before it ships."},
    "Do you offer gift wrapping?": {"right": "Gift wrapping is available at checkout for 3 EUR."},
    "Where is the size guide?": {"right": "The size guide is linked on every product page."},
    "How do I unsubscribe from the newsletter?": {
        "right": "Use the unsubscribe link at the bottom of any newsletter."},
    "I forgot my password.": {
        "right": "Choose 'Forgot password' on the sign-in page to get a reset link."},
    "Where do I find my invoice?": {
        "right": "Your invoice is attached to the order confirmation email."},
    "Can I be told when an item is back in stock?": {
        "right": "Yes: press 'Notify me' on the product page."},
    "How long does delivery take?": {"right": "Standard delivery takes 2 to 4 working days."},
    "Can I collect my order in a store?": {"right": "Yes, choose click & collect at checkout."},
    "Do gift cards expire?": {"right": "Gift cards are valid for three years."},
    "How do I delete my account?": {
        "right": "Write to privacy@acme.example and we delete it within 30 days."},
    "How many loyalty points do I earn?": {"right": "You earn 1 point per euro spent."},
    "Do you have a shop in Berlin?": {
        "right": "Yes, at Alexanderplatz 4, open Monday to Saturday."},
    "Can I return an item I bought in the sale?": {
        "right": "Yes, sale items have the same 30-day return window."},
    # -- the policy's exceptions: only the large model knows them ------------------------
    "Can I return software I have opened?": {
        "right": "No, opened software cannot be returned; it is exchanged if faulty.",
        "mini": "Yes, you have 30 days to return any item."},
    "Is the battery covered by the warranty?": {
        "right": "Batteries are covered for one year, not two.",
        "mini": "Yes, every part is covered for two years."},
    "Do you ship to Switzerland?": {
        "right": "Yes, and the customer pays the customs fees on delivery.",
        "mini": "Yes, at the standard price."},
    "Can a gift card be refunded?": {
        "right": "Gift cards cannot be refunded, only exchanged for another card.",
        "mini": "Yes, refunds take 5 business days."},
    "My parcel arrived damaged. What do I do?": {
        "right": "Send us a photo within 48 hours and we send a replacement.",
        "mini": "Return it within 30 days for a refund."},
    "The price dropped after I bought it. Can I get the difference?": {
        "right": "Yes, within 14 days of purchase we refund the difference.",
        "mini": "No, prices are final once you have paid."},
    "Can I combine two discount codes?": {
        "right": "No, there is one discount code per order.",
        "mini": "Yes, enter both codes at checkout."},
}

#: US dollars per million input and output tokens.
PRICES = {"helpdesk-large": (5.00, 15.00), "helpdesk-mini": (0.50, 1.50)}


def _tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 1.3))


def complete(model: str, prompt: str) -> Answer:
    """``model``'s answer to ``prompt``, with its token usage and what it cost."""
    if model not in PRICES:
        raise ValueError(f"no model {model!r}; known: {', '.join(PRICES)}")
    words = " ".join(prompt.split())  # a template's line breaks are not the model's business
    known = next((k for q, k in KNOWLEDGE.items() if q in words), None)
    if known is None:
        text = "I am sorry, I do not know; a colleague will write to you."
    elif model == "helpdesk-mini" and "mini" in known:
        text = known["mini"]
    elif "quote every figure exactly" not in words and "vague" in known:
        text = known["vague"]
    else:
        text = known["right"]
    tokens_in, tokens_out = _tokens(prompt), _tokens(text)
    price_in, price_out = PRICES[model]
    cost = (tokens_in * price_in + tokens_out * price_out) / 1_000_000
    return Answer(text=text, usage=Usage(input_tokens=tokens_in, output_tokens=tokens_out,
                                         cost_usd=round(cost, 8), model=model))
