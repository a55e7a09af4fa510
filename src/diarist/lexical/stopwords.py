"""Short stopword lists per language: the articles, pronouns, prepositions, conjunctions and
auxiliaries that carry no evidence and have the longest postings (as English's
``ENGLISH_STOPWORDS`` below). Written for this project, matched case-folded before stemming. A language
without a list here keeps every word (its stemmer still applies)."""

from __future__ import annotations

# A short English stopword list: these words carry no evidence and have the longest postings.
ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have
    he her hers him his how i if in into is it its itself me my of on or our ours she should
    so than that the their theirs them then there these they this those to too us was we were
    what when where which who whom why will with would you your yours""".split()
)

_LISTS = {
    "de": """aber alle als also am an auch auf aus bei bin bis bist da damit dann das dass dem den
        denn der des dich die dir doch du durch ein eine einem einen einer eines er es etwas euch
        für hab habe haben hat hatte hatten ich ihm ihn ihnen ihr ihre im in ist ja jetzt kann
        können mein meine mich mir mit nach nicht noch nun nur ob oder ohne sehr sein seine sich
        sie sind so über um und uns unser vom von vor war waren was welche welcher welches wenn
        wer werden wie wir wird wo zu zum zur""",
    "es": """a al algo como con cual cuál cuando cuándo de del donde dónde el él ella ellas ellos en
        era es esa ese eso esta está estaba este esto fue fueron ha había han hay la las le les lo
        los me mi mis muy más ni no nos o para pero por porque que qué quien quién se sea ser si sí
        sin sobre son su sus también te tiene tu un una uno unos y ya yo""",
    "fr": """à au aux avec ce ces cette dans de des du elle elles en est et était étaient il ils je
        la le les leur leurs lui ma mais me mes moi mon ne nous on ou où par pas pour qu que quel
        quelle qui sa se ses son sont sur ta te tes toi ton tu un une vos votre vous y été être""",
    "it": """a ad al alla alle anche che chi ci come con cosa da dal dalla de dei del della delle di
        e è ed era erano gli ha hanno ho i il in io la le lei lo loro lui ma mi mia mio ne nei nel
        nella noi non o per perché più quale quando quello questo se si sono su sua suo tu un una
        uno voi""",
    "pt": """a ao aos as até com como da das de dela dele do dos e é ela ele eles em entre era eram
        essa esse eu foi foram há isso isto já lhe mais mas me meu minha muito na nas não nem no
        nos o os ou para pela pelo por qual quando que quem se sem ser seu sua são também te tem
        um uma você""",
    "nl": """aan al als bij dan dat de der deze die dit door een en er had heb hebben heeft het hij
        hoe hun ik in is je kan maar me met mij mijn na naar niet nog nu of om ons ook op over te
        tot u uit van voor wat was we wie wij zal ze zich zij zijn zo""",
    "sv": """att av de den det detta dig din du där eller en ett för från har hade han hon hur i
        inte jag kan man med men mig min mot nu när och om på sig sin som till under var vad vi
        vid vilken är""",
    "da": """af at de dem den der det du efter eller en er et for fra har hun hvad hvor i ikke jeg
        kan man med men mig min når og om på sig som til var vi""",
    "no": """at av de den der det du eller en er et for fra har hun hva hvor i ikke jeg kan man med
        men meg min når og om på seg som til var vi""",
    "fi": """ei ja jos kuin kuka mikä minä mitä mutta ne niin on oli olla ovat se sen siitä sinä
        he hän me te tai että""",
    "ru": """а бы был была были было в вам вас во вот все всё вы где да для до его её если есть еще
        ещё же за и из или им их к как кем когда кто ли мы на над не нет ни но о об он она они оно
        от по под при с со так также то того тоже только том ты у уже что чтобы чем это эта эти
        этот я
        какой какая какое какие каким какими каких какого какому какую каком каков какова каково
        каковы который которая которое которые которым которыми которых которого которому которую
        котором сколько чего кого кому чему чей чья чьё чьи почему зачем куда откуда""",
    "uk": """а але в від він вона вони де для до з за і й із їх як яка який як що це ти ми ви я
        на не по про та те то у""",
    "ar": """و في من على إلى عن مع هذا هذه ذلك تلك التي الذي الذين ما ماذا لم لن لا ثم أو أن إن كان
        كانت هو هي هم نحن أنا أنت كل بعد قبل عند حتى قد بين منذ كم متى أين كيف هل أي
        فيه فيها فيهم به بها بهم منه منها منهم عنه عنها عليه عليها له لها لهم لديه لديها لدى إليه
        إليها تم يتم يكون تكون عندما""",
    "hi": """का के की को में से पर और है हैं था थे थी हो ने यह वह ये वे इस उस इन उन एक भी तो ही
        कि जो क्या कौन कब कहाँ कैसे किस किसने किया लिए""",
    "pl": """a aby ale bo by być był była było co czy dla do i ich im jak jest jego jej już ma mnie
        na nie o od oraz po pod przez się są ta tak te to tu w we z za że""",
    "tr": """ama bir bu da de daha gibi için ile ise kadar ki mi mı mu mü ne o olan olarak ve veya
        ya şu""",
}

STOPWORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _LISTS.items()}


def stopwords(language: str) -> frozenset[str]:
    """The language's stopwords (empty when we have no list for it)."""
    return STOPWORDS.get(language, frozenset())
