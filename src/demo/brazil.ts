// Brazilian reference data and document numbers for the demo: names, cities with their area
// codes (DDD) and postcodes, CPF and CNPJ with valid check digits, phones, EAN-13 codes.
import type { Prng } from './prng.ts';

export const FEMALE_NAMES = [
  'Ana',
  'Beatriz',
  'Camila',
  'Daniela',
  'Fernanda',
  'Gabriela',
  'Helena',
  'Isabela',
  'Juliana',
  'Larissa',
  'Luana',
  'Mariana',
  'Natália',
  'Patrícia',
  'Raquel',
  'Sofia',
  'Tatiane',
  'Vanessa',
  'Aline',
  'Letícia',
  'Cláudia',
  'Bruna',
  'Renata',
  'Júlia',
];
export const MALE_NAMES = [
  'André',
  'Bruno',
  'Carlos',
  'Diego',
  'Eduardo',
  'Felipe',
  'Gustavo',
  'Henrique',
  'João',
  'Lucas',
  'Marcelo',
  'Paulo',
  'Rafael',
  'Rodrigo',
  'Thiago',
  'Vinícius',
  'Leonardo',
  'Mateus',
  'Pedro',
  'Fábio',
];
export const SURNAMES = [
  'Silva',
  'Santos',
  'Oliveira',
  'Souza',
  'Rodrigues',
  'Ferreira',
  'Alves',
  'Pereira',
  'Lima',
  'Gomes',
  'Costa',
  'Ribeiro',
  'Martins',
  'Carvalho',
  'Almeida',
  'Lopes',
  'Soares',
  'Fernandes',
  'Vieira',
  'Barbosa',
  'Rocha',
  'Dias',
  'Nascimento',
  'Andrade',
  'Moreira',
  'Nunes',
  'Marques',
  'Machado',
  'Mendes',
  'Freitas',
  'Cardoso',
  'Teixeira',
  'Araújo',
  'Correia',
  'Pinto',
  'Moura',
];

export interface City {
  name: string;
  state: string;
  ddd: string;
  /** First five digits of the postcodes used for the city (CEP `NNNNN-NNN`). */
  cep: string;
  neighborhoods: readonly string[];
}

export const CITIES: readonly City[] = [
  {
    name: 'São Paulo',
    state: 'SP',
    ddd: '11',
    cep: '01310',
    neighborhoods: ['Pinheiros', 'Vila Mariana', 'Moema', 'Tatuapé', 'Santana', 'Perdizes', 'Bela Vista'],
  },
  { name: 'Campinas', state: 'SP', ddd: '19', cep: '13015', neighborhoods: ['Cambuí', 'Taquaral', 'Barão Geraldo'] },
  { name: 'Rio de Janeiro', state: 'RJ', ddd: '21', cep: '22041', neighborhoods: ['Copacabana', 'Tijuca', 'Botafogo', 'Barra da Tijuca'] },
  { name: 'Belo Horizonte', state: 'MG', ddd: '31', cep: '30130', neighborhoods: ['Savassi', 'Funcionários', 'Pampulha', 'Lourdes'] },
  { name: 'Curitiba', state: 'PR', ddd: '41', cep: '80010', neighborhoods: ['Batel', 'Água Verde', 'Centro Cívico'] },
  { name: 'Porto Alegre', state: 'RS', ddd: '51', cep: '90010', neighborhoods: ['Moinhos de Vento', 'Menino Deus', 'Cidade Baixa'] },
  { name: 'Florianópolis', state: 'SC', ddd: '48', cep: '88010', neighborhoods: ['Centro', 'Trindade', 'Lagoa da Conceição'] },
  { name: 'Salvador', state: 'BA', ddd: '71', cep: '40010', neighborhoods: ['Barra', 'Pituba', 'Rio Vermelho'] },
  { name: 'Recife', state: 'PE', ddd: '81', cep: '50010', neighborhoods: ['Boa Viagem', 'Casa Forte', 'Graças'] },
  { name: 'Fortaleza', state: 'CE', ddd: '85', cep: '60010', neighborhoods: ['Aldeota', 'Meireles', 'Fátima'] },
  { name: 'Brasília', state: 'DF', ddd: '61', cep: '70040', neighborhoods: ['Asa Sul', 'Asa Norte', 'Lago Sul'] },
  { name: 'Goiânia', state: 'GO', ddd: '62', cep: '74015', neighborhoods: ['Setor Bueno', 'Setor Marista', 'Setor Oeste'] },
];

export const STREETS = [
  'Rua das Flores',
  'Avenida Paulista',
  'Rua XV de Novembro',
  'Rua Sete de Setembro',
  'Avenida Brasil',
  'Rua Tiradentes',
  'Rua São João',
  'Avenida Getúlio Vargas',
  'Rua Dom Pedro II',
  'Rua Santos Dumont',
  'Alameda Santos',
  'Rua da Consolação',
  'Avenida Afonso Pena',
  'Rua Marechal Deodoro',
  'Rua Padre Anchieta',
];

export const EMAIL_DOMAINS = ['gmail.com', 'hotmail.com', 'outlook.com', 'yahoo.com.br', 'uol.com.br', 'icloud.com'];

const checkDigit = (digits: readonly number[], weights: readonly number[]): number => {
  const rest = digits.reduce((sum, d, i) => sum + d * (weights[i] as number), 0) % 11;
  return rest < 2 ? 0 : 11 - rest;
};

/** A CPF with valid check digits, formatted `123.456.789-09`. */
export function cpf(prng: Prng): string {
  let base = prng.digits(9);
  while (base.every((d) => d === base[0])) base = prng.digits(9);
  const d1 = checkDigit(base, [10, 9, 8, 7, 6, 5, 4, 3, 2]);
  const d2 = checkDigit([...base, d1], [11, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
  const s = [...base, d1, d2].join('');
  return `${s.slice(0, 3)}.${s.slice(3, 6)}.${s.slice(6, 9)}-${s.slice(9)}`;
}

/** A CNPJ (head office, branch 0001) with valid check digits, formatted `12.345.678/0001-95`. */
export function cnpj(prng: Prng): string {
  const base = [...prng.digits(8), 0, 0, 0, 1];
  const d1 = checkDigit(base, [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]);
  const d2 = checkDigit([...base, d1], [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]);
  const s = [...base, d1, d2].join('');
  return `${s.slice(0, 2)}.${s.slice(2, 5)}.${s.slice(5, 8)}/${s.slice(8, 12)}-${s.slice(12)}`;
}

export const onlyDigits = (value: string): string => value.replace(/\D/g, '');

/** A mobile number of the city's area code: `+55 11 98765-4321`. */
export function mobilePhone(prng: Prng, ddd: string): string {
  const n = prng.digits(8).join('');
  return `+55 ${ddd} 9${n.slice(0, 4)}-${n.slice(4)}`;
}

/** A landline of the city's area code: `+55 11 3456-7890`. */
export function landline(prng: Prng, ddd: string): string {
  return `+55 ${ddd} ${prng.int(2, 5)}${prng.digits(3).join('')}-${prng.digits(4).join('')}`;
}

export function cep(prng: Prng, city: City): string {
  return `${city.cep}-${prng.digits(3).join('')}`;
}

/** A Brazilian EAN-13 (prefix 789) with its check digit. */
export function ean13(prng: Prng): string {
  const digits = [7, 8, 9, ...prng.digits(9)];
  const sum = digits.reduce((acc, d, i) => acc + d * (i % 2 === 0 ? 1 : 3), 0);
  return [...digits, (10 - (sum % 10)) % 10].join('');
}

/** `Júlia Araújo` → `julia.araujo`: the local part of a plausible e-mail address. */
export function emailSlug(...parts: string[]): string {
  return parts
    .join('.')
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, '');
}
