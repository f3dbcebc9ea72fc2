"""Real words and well-known names a generated entity name must never equal.

Generated names are built from syllables, so most real words cannot occur; this list catches the
short consonant-vowel words, given names, places and brands that such syllables can spell.
"""

from __future__ import annotations

_TEXT = """
able acre aged aide alarm alba album alive allow alone alpha amber angel anger angle animal ankle
apple april arena argue army aroma arrow asset atlas avenue avoid award bacon badge baker balance
ballet banana band bank banner barber barrel basic basin basket baton beacon beaver before begin
being belly below bench berry better bible bike binary biscuit bitter blade blame blanket bonus border
bottle bottom bounce brave bread broken bronze brother bubble bucket budget buffer bullet bundle burden
butter button cabin cable cactus camel camera camp canal candle candy canoe canon canvas canyon capital
captain carbon career cargo carpet carrot castle casual cattle cause cave cedar cellar cement center
cereal chapel cherry chosen cider cinema circle citizen civil claim clamor coffee colony color comet
comma common coral corner cosmic cotton cousin cover coyote crater credit cricket cupid curtain cushion
damage dance danger data debate debit decade decent decimal delta demon denim depot desert design
desire detail devil diamond dinner divide doctor dollar domain donor donut double dragon drama
eager eagle early easel eaten echo eden edit eleven ember emerald empire enemy engine enter equal
error essay ethic event evil exit fable fabric falcon famous farmer fatal favor feather fever fiber
figure final finger fiscal flavor flower focus forest forever forget formal fossil frozen fuel future
galaxy gallon garden garlic gate gazebo gecko gender genie genius gentle ginger giraffe given glory
golden gorilla gospel govern grand granite habit hammer harbor harvest helmet hero hidden holiday
honey honor horizon hotel human humor hunger ideal idiom igloo image index infant inner insect iron
island item ivory jacket jaguar jelly jewel joker jungle junior kayak kennel kernel kettle kitten koala
label labor ladder lady lagoon lake lamb lament lamp laser later lava legal legend lemon lesson lever
liberal lily limit linen liner lion liquid listen litter liver lizard local locker lotus lover lumber
lunar lunch magic magnet mammal mango manor marble margin marine market marrow master meadow medal
medium melon memo menu mercy merit metal meter method midnight minor minute mirror model modem
moment monkey monster motor mural muscle museum music napkin narrow nation native nature navel
navy nectar needle nerve never nickel ninja noble noodle normal novel number nutmeg oasis object ocean
office olive omega onion open opera orange orbit order organ oven owner oxygen paddle palace panda
panel panic paper parade parent parole pasta pastel patio pedal pelican pencil pepper permit person
petal piano picnic pilot pirate pistol planet plaza pocket poem poet polar police polo pony potato
powder power prison radar radio raven razor rebel record relic remote rental rescue ribbon rider
rifle river robin robot rocket rodeo romance roster rotor royal ruby rumor saddle safari salad
salmon salon salsa salute sandal satin sauna savior scholar second secret sector senior sepia serum
seven shadow shelter silent silver simple sister soda solar soldier solid sonar sonata spider spinal
spiral stable statue sugar summer sunset super supper table taco talent tango target tavern temple
tenor tennis terror theme tiger timber token tomato topaz torso total totem tower travel tribe tulip
tunnel turbo turkey tutor umbrella unit valley value vapor velvet venom venue verdict vessel veto
video villa violin virus visa visit visual vital vivid vocal volume voter wagon walnut walrus water
wizard wonder yoga zebra zero zone
alan alex alice amanda anna barbara bella bob carla carol cora daniel dana diana dina donna dora
ella elena elisa emma erika eva fiona gina hanna helena ida irene iris jana julia karen karina kate
kira lara laura lena lina linda lisa lola lora lucia luna maria marina marta mary maya melissa mia
mila mina mona nadia nana nina nora olga paula pola rita rosa sabrina sally sara selena sofia sonia
tina tomas vera viola wanda adam aron boris carlos dario david denis dino elias emil felix fidel
igor ivan jonas kevin leon linus lucas marco mario marius martin mateo milan nico nikola noel omar
oscar otto pablo paolo pedro petra remo robert roman ruben simon stefan teodor tobias victor viktor
akron alaska aleppo amman angola aruba athens atlanta austin bali baku belize benin berlin bolivia
boston burma cairo canada chile cuba dakota dallas delhi denver dubai dublin fargo fiji gabon genoa
ghana guam haiti hanoi havana idaho india iowa italy jakarta japan java jordan kabul kenya kobe kyoto
laos latvia lima lisbon macau madrid malawi mali malta manila milan monaco moscow nepal nevada niger
oman osaka oslo padua panama paris peru poland qatar rome roma russia samoa siena sudan sydney syria
tokyo toledo tonga togo turin utah verona vienna zambia
audi bosch canon casio dior fanta fiat ford honda ikea intel kodak lada lego lexus mazda nike nikon
nokia nova pepsi prada puma rolex seat sega sony subaru suzuki tesla toyota volvo yamaha zara
"""

COMMON_WORDS: frozenset[str] = frozenset(_TEXT.split())
